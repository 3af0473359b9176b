"""Flags (validation, storage, export) and sanitised Markdown: script tags, javascript: links and
event attributes never reach a page as markup."""
from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.urls import reverse

from curation.guidance import flags as flag_services
from curation.guidance.flags import align_turns, clean_flags
from curation.guidance.markdown import render_markdown
from curation.models import Flag, Review, ReviewItem, ReviewMeta, ReviewStage
from curation.reviews import services
from tests.conftest import PASSWORD
from tests.curation.factories import build_lineage

XSS = '<script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">x</a>'


@pytest.mark.parametrize("source", [
    "<script>alert(1)</script>",
    "[click](javascript:alert(1))",
    "[click](JAVASCRIPT:alert(1))",
    "<img src=x onerror=alert(1)>",
    '<a href="#" onclick="alert(1)">x</a>',
    "![x](javascript:alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD4=)",
])
def test_markdown_keeps_no_active_content(source):
    html = str(render_markdown(source)).lower()
    assert "<script" not in html
    assert not re.search(r"<[a-z][^>]*\son[a-z]+\s*=", html), html  # no event attribute on a real tag
    assert not re.search(r'(href|src)\s*=\s*"\s*(javascript|data):', html), html


def test_markdown_renders_tables_lists_and_safe_links():
    html = str(render_markdown("# T\n\n1. one\n2. two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n[ok](https://example.org)"))
    assert "<h1>T</h1>" in html and "<ol>" in html and "<table>" in html and "<td>1</td>" in html
    assert 'href="https://example.org"' in html and 'rel="noopener noreferrer nofollow"' in html
    assert str(render_markdown("")) == ""


def test_align_turns_pairs_messages_with_path_nodes():
    types = {"N0": "assistant", "N1": "user", "N2": "api", "N3": "assistant"}
    msgs = [{"role": "user"}, {"role": "api"}, {"role": "api_output"}, {"role": "assistant"}]
    assert align_turns(msgs, ["N0", "N1", "N2", "N3"], types) == ["N1", "N2", "N2", "N3"]
    assert align_turns([{"role": "assistant"}], [], types) == [None]


@pytest.mark.django_db
def test_clean_flags_names_the_bad_entry(lineage):
    services.items_sync()
    item = ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH)
    allowed = flag_services.targets(item)
    assert "N2" in allowed["node"] and "N1->N2" in allowed["edge"] and not allowed["turn"]
    ok = clean_flags('[{"kind": "node", "target": "N2", "reason": "FG-UNFAITHFUL", "comment": " c "}]',
                     stage=item.stage, allowed=allowed)
    assert ok == [{"kind": "node", "target": "N2", "reason": "FG-UNFAITHFUL", "comment": "c"}]
    bad = [("not json", "not JSON"), ('{"a": 1}', "must be a list"), ('[1]', "Flag 1: expected an object"),
           ('[{"kind": "x", "target": "N2", "reason": "OTHER"}]', "kind must be"),
           ('[{"kind": "node", "target": "N99", "reason": "FG-UNFAITHFUL"}]', "no node 'N99'"),
           ('[{"kind": "node", "target": "N2", "reason": "NOPE"}]', "unknown reason code"),
           ('[{"kind": "node", "target": "N2", "reason": "OTHER"}]', "OTHER needs a comment"),
           ('[{"kind": "turn", "target": "0", "reason": "FG-UNFAITHFUL"}]', "no turn '0'")]
    for raw, message in bad:
        with pytest.raises(services.CurationError, match=message):
            clean_flags(raw, stage=item.stage, allowed=allowed)


@pytest.mark.django_db
def test_flags_are_stored_shown_escaped_and_exported(client, annotator_a, annotator_b, adjudicator):
    build_lineage(conversations=1, hostile=True)
    services.items_sync()
    item = ReviewItem.objects.get(stage=ReviewStage.CONVERSATION)
    client.login(username=annotator_a.username, password=PASSWORD)
    assert client.post(reverse("curation:claim_next", args=["conversation"]))["Location"].endswith(f"/{item.pk}/")
    page = client.get(reverse("curation:review", args=[item.pk])).content.decode()
    assert "<script>alert" not in page  # hostile turn text, intent and procedure stay text
    flags = json.dumps([{"kind": "turn", "target": "0", "reason": "OTHER", "comment": XSS}])
    resp = client.post(reverse("curation:submit", args=[item.pk]), {"verdict": "reject", "flags": flags})
    assert resp.status_code == 302
    review = Review.objects.get(item=item, annotator=annotator_a)
    assert review.reason_codes == ["OTHER"] and review.comment.endswith(XSS)  # flags alone made the reject
    assert Flag.objects.get(review=review).comment == XSS
    assert ReviewMeta.objects.get(review=review).seconds is not None
    page = client.get(reverse("curation:review", args=[item.pk])).content.decode()
    assert 'id="own-flags"' in page and XSS not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # A bad flag is refused with its reason, nothing stored.
    client.logout()
    client.login(username=annotator_b.username, password=PASSWORD)
    client.post(reverse("curation:claim_next", args=["conversation"]))
    bad = json.dumps([{"kind": "node", "target": "N404", "reason": "CV-UNNATURAL"}])
    resp = client.post(reverse("curation:submit", args=[item.pk]), {"verdict": "reject", "flags": bad}, follow=True)
    assert "this item has no node" in resp.content.decode()
    assert not Review.objects.filter(item=item, annotator=annotator_b).exists()
    client.post(reverse("curation:submit", args=[item.pk]), {"verdict": "accept"})
    # Adjudication page: escaped; CSV export: flags column.
    client.logout()
    client.login(username=adjudicator.username, password=PASSWORD)
    page = client.get(reverse("curation:adjudicate", args=[item.pk])).content.decode()
    assert 'id="flag-table"' in page and XSS not in page
    body = b"".join(client.get(reverse("curation:agreement_csv")).streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    flagged = [r for r in rows if r["annotator"] == "annotator_a"]
    assert flagged and flagged[0]["flags"].startswith("turn 0: OTHER (")

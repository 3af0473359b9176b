"""The explorer as a data manager (issue #31): previews, the side panel (roles and blindness),
open items for adjudicators, the gold toggle, bulk actions on a selection or on the whole filter."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from curation.guidance import flags as flag_services
from curation.models import GoldItem, GoldOrigin, ItemState, ReviewItem, ReviewStage
from curation.reviews import services
from tests.conftest import PASSWORD
from tests.curation.factories import HOSTILE, build_lineage, draw_graphs

pytestmark = pytest.mark.django_db


def _review(user, item, verdict):
    from django.utils import timezone

    from curation.guidance.services import reason_codes
    from curation.reviews.claims import _claim_upsert

    _claim_upsert(item, user, timezone.now())  # this item, whatever the queue would offer first
    codes = [reason_codes(item.stage)[0][0]] if verdict == "reject" else []
    return flag_services.review_submit_flagged(annotator=user, item_id=item.pk, verdict=verdict, reason_codes=codes)


def _items(stage, n_lineages=2, **kw):
    for seed in range(n_lineages):
        build_lineage(conversations=1, seed=seed, **kw)
    services.items_sync()
    draw_graphs()  # the worker's drawings
    return list(ReviewItem.objects.filter(stage=stage).order_by("id"))


def _login(client, user):
    client.force_login(user)
    return client


def _panel(client, item):
    return client.get(reverse("curation:explore_panel", args=[item.pk]))


def test_previews_show_first_turns_and_graph_counts_escaped_without_per_row_queries(client, adjudicator):
    _items(ReviewStage.CONVERSATION, n_lineages=1, hostile=True)
    _login(client, adjudicator)
    page = client.get(reverse("curation:explore", args=["conversation"])).content.decode()
    assert "&lt;script&gt;alert" in page and "<script>alert" not in page  # the first turn, escaped
    from generation.models import ConversationGraph, Flowgraph
    fg = Flowgraph.objects.get()
    page = client.get(reverse("curation:explore", args=["flowgraph"])).content.decode()
    assert f'{len(fg.data["nodes"])} nodes · {len(fg.data["edges"])} edges' in page
    cg = ConversationGraph.objects.get()
    page = client.get(reverse("curation:explore", args=["conversation_graph"])).content.decode()
    assert f'{len(cg.data["nodes"])} nodes · {len(cg.data["edges"])} edges' in page
    # The number of queries does not grow with the rows on the page.
    counts = []
    for extra in (0, 4):
        _items(ReviewStage.CONVERSATION, n_lineages=extra)
        with CaptureQueriesContext(connection) as ctx:
            resp = client.get(reverse("curation:explore", args=["conversation"]))
        counts.append((len(resp.context["rows"]), len(ctx.captured_queries)))
    assert counts[1][0] == counts[0][0] + 4 and counts[1][1] == counts[0][1]


def test_panel_roles_and_unknown_ids(client, annotator_a, annotator_b, adjudicator, researcher, admin_user, outsider):
    fg1, fg2 = _items(ReviewStage.FLOWGRAPH)
    _review(annotator_a, fg1, "accept")
    url = reverse("curation:explore_panel", args=[fg1.pk])
    assert client.get(url).status_code == 302  # anonymous → login
    for user, status in ((outsider, 403), (annotator_b, 403), (annotator_a, 200), (adjudicator, 200),
                         (researcher, 200), (admin_user, 200)):
        _login(client, user)
        assert client.get(url).status_code == status, user.username
    _login(client, annotator_a)
    assert _panel(client, fg2).status_code == 403  # not reviewed by them
    assert client.post(url).status_code == 405
    assert client.get(reverse("curation:explore_panel", args=[999999])).status_code == 404
    assert client.get(reverse("curation:explore_panel", args=[2**63])).status_code in (400, 404)


def _normalise(html: str, item: ReviewItem) -> str:
    html = re.sub(r"\d+", "N", html)  # ids, counts and object ids differ; nothing else may
    return html


def test_panel_blind_for_annotators_agreement_looks_like_disagreement(client, annotator_a, annotator_b):
    agreed, disputed = _items(ReviewStage.FLOWGRAPH)
    _review(annotator_a, agreed, "accept")
    _review(annotator_a, disputed, "accept")
    _review(annotator_b, agreed, "accept")
    _review(annotator_b, disputed, "reject")
    agreed.refresh_from_db(), disputed.refresh_from_db()
    assert agreed.state == ItemState.DECIDED and disputed.state == ItemState.DISAGREEMENT
    _login(client, annotator_a)
    pages = [_panel(client, it).content.decode() for it in (agreed, disputed)]
    for page in pages:
        assert "annotator_b" not in page and "Rejected" not in page and "Accepted" not in page
        assert 'id="panel-state"' in page and "All reviews in" in page
        assert page.count('class="badge accept"') == 1  # their own verdict only
    assert _normalise(pages[0], agreed) == _normalise(pages[1], disputed)


def test_open_items_open_for_adjudicators_without_verdicts(client, annotator_a, adjudicator, admin_user):
    item, _ = _items(ReviewStage.FLOWGRAPH)
    _review(annotator_a, item, "reject")
    item.refresh_from_db()
    assert item.state == ItemState.OPEN
    _login(client, adjudicator)
    panel = _panel(client, item).content.decode()
    assert 'class="badge reject"' not in panel and "verdicts stay hidden" in panel and 'id="panel-full"' in panel
    page = client.get(reverse("curation:adjudicate", args=[item.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="still-open"' in html and 'class="badge reject"' not in html and 'id="resolve-form"' not in html
    resp = client.post(reverse("curation:adjudicate", args=[item.pk]), {"decision": "accept", "note": "x"})
    item.refresh_from_db()
    assert resp.status_code == 302 and item.state == ItemState.OPEN and not item.decision
    _login(client, admin_user)  # admins see every verdict, as on the review page
    assert 'class="badge reject"' in _panel(client, item).content.decode()


def test_gold_toggle(client, admin_user, adjudicator):
    fg1, fg2 = _items(ReviewStage.FLOWGRAPH)
    url = reverse("curation:explore_gold", args=[fg1.pk])
    _login(client, adjudicator)
    assert client.post(url, {"expected": "reject"}).status_code == 403
    assert 'data-col="gold"' not in client.get(reverse("curation:explore", args=["flowgraph"])).content.decode()
    _login(client, admin_user)
    assert client.get(url).status_code == 405
    assert client.post(reverse("curation:explore_gold", args=[999999]), {"expected": "reject"}).status_code == 404
    client.post(url, {"expected": "reject"})
    assert GoldItem.objects.get(item=fg1).expected == "reject" and not GoldItem.objects.filter(item=fg2).exists()
    page = client.get(reverse("curation:explore", args=["flowgraph"])).content.decode()
    assert page.count("★ gold") == 1
    client.post(url, {"expected": ""})
    assert not GoldItem.objects.filter(item=fg1).exists()
    resp = client.post(url, {"expected": "maybe"}, follow=True)
    assert "accept or reject" in resp.content.decode() and not GoldItem.objects.exists()
    GoldItem.objects.create(item=fg2, expected="reject", origin=GoldOrigin.SEEDED)
    resp = client.post(reverse("curation:explore_gold", args=[fg2.pk]), {"expected": ""}, follow=True)
    assert "stays gold" in resp.content.decode() and GoldItem.objects.filter(item=fg2).exists()


def test_bulk_on_selection_or_on_the_filter(client, adjudicator, annotator_a):
    items = _items(ReviewStage.FLOWGRAPH, n_lineages=4)
    _review(annotator_a, items[3], "accept")  # still open, but with a review
    url = reverse("curation:explore_bulk", args=["flowgraph"])
    listing = reverse("curation:explore", args=["flowgraph"])
    _login(client, adjudicator)
    # On a selection: only the ticked items.
    client.post(url, {"action": "exclude", "items": [items[0].pk], "next": listing})
    assert [it.pk for it in ReviewItem.objects.filter(stage="flowgraph", withheld=True)] == [items[0].pk]
    # On the filter "needs reviews" (3 items now): a stale confirmation changes nothing.
    nxt = listing + "?state=open"
    resp = client.post(url, {"action": "required", "required": "3", "scope": "filter", "confirm_count": "4",
                             "next": nxt}, follow=True)
    assert "now matches 3 item(s)" in resp.content.decode()
    assert not ReviewItem.objects.filter(stage="flowgraph", required_reviews=3).exists()
    # The right count: every item of the filter, whatever is ticked; the excluded one stays as it was.
    client.post(url, {"action": "required", "required": "3", "scope": "filter", "confirm_count": "3",
                      "items": [items[1].pk], "next": nxt})
    changed = set(ReviewItem.objects.filter(stage="flowgraph", required_reviews=3).values_list("pk", flat=True))
    assert changed == {items[1].pk, items[2].pk, items[3].pk}
    # The filter is the one in `next` (a text filter matching nothing changes nothing).
    resp = client.post(url, {"action": "exclude", "scope": "filter", "confirm_count": "0",
                             "next": listing + "?q=nothing-matches-this"}, follow=True)
    assert ReviewItem.objects.filter(stage="flowgraph", withheld=True).count() == 1
    assert "Tick at least one item" in resp.content.decode()

"""Every curation page and endpoint for every role, anonymous visitors and wrong methods."""
from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from curation.models import Claim, ItemState, Review, ReviewItem, ReviewStage
from curation.reviews import services
from tests.conftest import PASSWORD
from tests.curation.factories import build_lineage, draw_graphs

ROLES = ["annotator", "annotator_b", "adjudicator", "researcher", "admin", "outsider", None]


@pytest.fixture
def world(personas):
    """A flowgraph item held by `annotator`, and a disputed procedure item."""
    lin = build_lineage(conversations=1)
    services.items_sync()
    draw_graphs()  # the worker's drawings
    a, b = personas["annotator"], personas["annotator_b"]
    proc = services.review_claim_next(annotator=a, stage=ReviewStage.PROCEDURE)
    services.review_submit(annotator=a, item_id=proc.pk, verdict="accept")
    services.review_claim_next(annotator=b, stage=ReviewStage.PROCEDURE)
    services.review_submit(annotator=b, item_id=proc.pk, verdict="reject", reason_codes=["PR-GENERAL"],
                           comment="vague step 3")
    fg = services.review_claim_next(annotator=a, stage=ReviewStage.FLOWGRAPH)
    return {"lineage": lin, "fg": fg, "disputed": proc, **personas}


def login(client, world, role):
    if role:
        client.login(username=world[role].username, password=PASSWORD)


def check(resp, role, allowed):
    if role is None:
        assert resp.status_code == 302 and reverse("login") in resp["Location"]
    elif allowed:
        assert resp.status_code in (200, 302), resp.status_code
    else:
        assert resp.status_code == 403


GET_PAGES = [
    ("curation:queue", {}, {"annotator", "annotator_b", "admin"}),
    ("curation:adjudication", {}, {"adjudicator", "admin"}),
    ("curation:agreement", {}, {"adjudicator", "researcher", "admin"}),
    ("curation:agreement_csv", {}, {"adjudicator", "researcher", "admin"}),
    ("curation:progress", {}, {"adjudicator", "researcher", "admin"}),
    ("curation:audit", {}, {"admin"}),
]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name,kwargs,allowed", GET_PAGES)
def test_get_pages_by_role(client, world, role, name, kwargs, allowed):
    login(client, world, role)
    resp = client.get(reverse(name, kwargs=kwargs))
    check(resp, role, role in allowed)
    if role in allowed:
        assert resp.status_code == 200
        assert client.post(reverse(name, kwargs=kwargs)).status_code == 405


@pytest.mark.parametrize("role", ROLES)
def test_review_page_by_role(client, world, role):
    login(client, world, role)
    resp = client.get(reverse("curation:review", args=[world["fg"].pk]))
    # Only the annotator holding the claim (and admins) may open it.
    check(resp, role, role in {"annotator", "admin"})
    if role == "annotator":
        assert resp.status_code == 200 and "<svg" in resp.content.decode()
        assert client.post(reverse("curation:review", args=[world["fg"].pk])).status_code == 405


@pytest.mark.parametrize("role", ROLES)
def test_claim_next_by_role(client, world, role):
    login(client, world, role)
    url = reverse("curation:claim_next", args=["flowgraph"])
    resp = client.post(url)
    check(resp, role, role in {"annotator", "annotator_b", "admin"})
    if role in {"annotator", "annotator_b"}:
        assert resp["Location"] == reverse("curation:review", args=[world["fg"].pk])
        assert client.get(url).status_code == 405
    if role == "annotator":
        assert client.post(reverse("curation:claim_next", args=["nonsense"])).status_code == 404


@pytest.mark.parametrize("role", ROLES)
def test_submit_by_role(client, world, role):
    login(client, world, role)
    url = reverse("curation:submit", args=[world["fg"].pk])
    resp = client.post(url, {"verdict": "accept"})
    check(resp, role, role in {"annotator", "annotator_b", "admin"})
    if role == "annotator":
        assert Review.objects.filter(item=world["fg"], annotator=world["annotator"]).exists()
        assert client.get(url).status_code == 405
    elif role in {"annotator_b", "admin"}:
        # Allowed to try, but they hold no claim: nothing is recorded.
        assert not Review.objects.filter(item=world["fg"]).exists()


@pytest.mark.parametrize("role", ROLES)
def test_skip_by_role(client, world, role):
    login(client, world, role)
    url = reverse("curation:skip", args=[world["fg"].pk])
    resp = client.post(url, {"reason": "unsure", "detail": "not my domain"})
    check(resp, role, role in {"annotator", "annotator_b", "admin"})
    if role == "annotator":
        assert not Claim.objects.filter(item=world["fg"], annotator=world["annotator"]).exists()
        assert world["fg"].skips.get().reason == "unsure: not my domain"
        assert client.get(url).status_code == 405


@pytest.mark.parametrize("role", ROLES)
def test_undo_by_role(client, world, role):
    services.review_submit(annotator=world["annotator"], item_id=world["fg"].pk, verdict="accept")
    login(client, world, role)
    url = reverse("curation:undo")
    resp = client.post(url)
    check(resp, role, role in {"annotator", "annotator_b", "admin"})
    if role == "annotator":
        # The flowgraph still awaits b's review: the verdict is withdrawn and the claim restored.
        world["fg"].refresh_from_db()
        assert world["fg"].review_count == 0
        assert resp["Location"] == reverse("curation:review", args=[world["fg"].pk])
        assert client.get(url).status_code == 405
    if role == "annotator_b":
        # b's last verdict completed the disputed item: refused, nothing changes.
        assert resp["Location"] == reverse("curation:queue")
        world["disputed"].refresh_from_db()
        assert world["disputed"].state == ItemState.DISAGREEMENT


@pytest.mark.parametrize("role", ROLES)
def test_adjudicate_by_role(client, world, role):
    login(client, world, role)
    url = reverse("curation:adjudicate", args=[world["disputed"].pk])
    resp = client.get(url)
    check(resp, role, role in {"adjudicator", "admin"})
    if role not in {"adjudicator", "admin"}:
        resp = client.post(url, {"decision": "reject", "note": "x"})
        check(resp, role, False)
        return
    page = resp.content.decode()
    assert "vague step 3" in page and "Annotator 1" in page and "annotator_b" not in page
    assert "annotator_b" in client.get(url + "?names=1").content.decode()
    assert client.put(url).status_code == 405
    # A note is required.
    resp = client.post(url, {"decision": "reject", "note": " "})
    assert resp.status_code == 200 and ReviewItem.objects.get(pk=world["disputed"].pk).state == ItemState.DISAGREEMENT
    resp = client.post(url, {"decision": "reject", "note": "step 3 is vague"})
    assert resp.status_code == 302
    page = client.get(url).content.decode()
    assert 'id="cascade"' in page and "excluded" in page


def test_open_items_open_read_only_on_the_adjudication_page(client, world):
    # Issue #31: an adjudicator may read an item still taking reviews, never decide it or see its verdicts.
    client.login(username="adjudicator", password=PASSWORD)
    url = reverse("curation:adjudicate", args=[world["fg"].pk])
    resp = client.get(url)
    page = resp.content.decode()
    assert resp.status_code == 200 and 'id="still-open"' in page and 'id="resolve-form"' not in page
    assert "review-box" not in page
    assert client.post(url, {"decision": "accept", "note": "x"}).status_code == 302
    assert ReviewItem.objects.get(pk=world["fg"].pk).state == ItemState.OPEN


def test_agreement_csv_only_complete_items(client, world):
    services.review_submit(annotator=world["annotator"], item_id=world["fg"].pk, verdict="accept")
    client.login(username="researcher", password=PASSWORD)
    resp = client.get(reverse("curation:agreement_csv"))
    rows = list(csv.DictReader(io.StringIO(b"".join(resp.streaming_content).decode())))  # a streamed download
    assert {r["stage"] for r in rows} == {"procedure"}  # the half-reviewed flowgraph stays blind
    assert {r["comment"] for r in rows} == {"", "vague step 3"}
    page = client.get(reverse("curation:agreement")).content.decode()
    assert "undefined" in page and "annotator_a · annotator_b" in page


def test_admin_site_is_closed_to_every_role_but_admin(client, world):
    url = reverse("admin:curation_review_changelist")
    for role in ("annotator", "annotator_b", "adjudicator", "researcher", "outsider"):
        client.logout()
        login(client, world, role)
        resp = client.get(url)
        assert resp.status_code == 403 and b"result_list" not in resp.content, role
    client.logout()
    login(client, world, "admin")
    page = client.get(url).content.decode()
    assert client.get(url).status_code == 200 and "annotator_b" in page


def test_annotator_b_sees_no_verdict_of_a_before_submitting(client, world):
    a, b = world["annotator"], world["annotator_b"]
    services.review_submit(annotator=a, item_id=world["fg"].pk, verdict="reject", reason_codes=["FG-ROOT"],
                           comment="SECRET-COMMENT-OF-A")
    client.login(username=b.username, password=PASSWORD)
    resp = client.post(reverse("curation:claim_next", args=["flowgraph"]))
    page = client.get(resp["Location"]).content.decode()
    assert "SECRET-COMMENT-OF-A" not in page and "FG-ROOT</code> <span" not in page.split('id="reasons"')[0]
    assert 'id="other-verdicts"' not in page


def test_hostile_text_is_escaped_in_pages_and_svg(client, db, annotator_a):
    lin = build_lineage(conversations=1, hostile=True)
    services.items_sync()
    draw_graphs()  # the worker's drawings
    client.login(username=annotator_a.username, password=PASSWORD)
    for stage in ("procedure", "flowgraph", "conversation"):
        resp = client.post(reverse("curation:claim_next", args=[stage]))
        page = client.get(resp["Location"]).content.decode()
        assert "<script>alert" not in page, stage
        assert "&lt;script&gt;alert(" in page, stage
        if stage == "flowgraph":
            svg = page[page.index("<svg"):page.index("</svg>")]
            assert "&lt;script&gt;" in svg and "<script" not in svg
            # The DOT syntax stayed inside its label: no extra node or edge was injected.
            assert len(re.findall(r'class="node"', svg)) == len(lin.flowgraph.data["nodes"])
            assert len(re.findall(r'class="edge"', svg)) == len(lin.flowgraph.data["edges"])
            assert "&quot;]; a &#45;&gt; b [" in svg
        if stage == "conversation":
            assert page.count("<svg") == 1


def test_conversation_is_shown_beside_its_graph_with_the_path_highlighted(client, lineage, annotator_a, monkeypatch):
    """The path is highlighted in the browser on the graph's stored drawing: no drawing is made."""
    import html

    from generation import drawings
    from generation.pipeline.render import HIGHLIGHT_COLOUR

    services.items_sync()
    for cg in {p.conversation_graph for p in lineage.paths}:
        drawings.drawing_store(cg)  # the worker's drawing
    monkeypatch.setattr(drawings, "to_svg_readable", lambda *a, **k: pytest.fail("drew during the request"))
    client.login(username=annotator_a.username, password=PASSWORD)
    resp = client.post(reverse("curation:claim_next", args=["conversation"]))
    page = client.get(resp["Location"]).content.decode()
    assert 'class="item-body with-graph"' in page and 'class="turns"' in page
    # The turns are not mistaken for flash messages (base.html's `messages`).
    assert '<ul class="messages">' not in page
    assert page.count("<svg") == 1
    path = json.loads(html.unescape(re.search(r'data-path="([^"]*)"', page).group(1)))
    assert path in ([str(n) for n in lineage.paths[0].node_ids], [str(n) for n in lineage.paths[1].node_ids])
    assert f'data-path-colour="{HIGHLIGHT_COLOUR}"' in page
    assert " → ".join(path) in page


def test_procedure_page_shows_the_api_table(client, lineage, annotator_a):
    services.items_sync()
    client.login(username=annotator_a.username, password=PASSWORD)
    resp = client.post(reverse("curation:claim_next", args=["procedure"]))
    page = client.get(resp["Location"]).content.decode()
    assert 'class="grid api-table"' in page and "refund_order" in page and "order_id" in page
    assert "PR-GENERAL" in page and "Guidelines" in page


def test_audit_log_is_append_only_in_the_admin(client, world):
    login(client, world, "admin")
    event = world["fg"].audit.first()
    assert client.get(reverse("admin:curation_auditevent_change", args=[event.pk])).status_code == 200
    resp = client.post(reverse("admin:curation_auditevent_delete", args=[event.pk]), {"post": "yes"})
    assert resp.status_code == 403
    page = client.get(reverse("curation:audit")).content.decode()
    assert "Claim" in page and "Verdict" in page


def test_annotator_cannot_tell_their_item_went_to_adjudication(client, world):
    client.login(username=world["annotator_b"].username, password=PASSWORD)
    page = client.get(reverse("curation:review", args=[world["disputed"].pk])).content.decode()
    assert "Awaiting adjudication" not in page and "All reviews in" in page
    assert 'id="undo-form"' not in page and 'id="other-verdicts"' not in page
    client.logout()
    client.login(username="admin", password=PASSWORD)
    assert "Awaiting adjudication" in client.get(reverse("curation:review", args=[world["disputed"].pk])).content.decode()


def test_progress_page_splits_verdicts_for_admins_only(client, world):
    client.login(username="adjudicator", password=PASSWORD)
    page = client.get(reverse("curation:progress")).content.decode()
    assert "annotator_a" in page and "<th>Accepted</th>" not in page.split('id="progress"')[1]
    client.logout()
    client.login(username="admin", password=PASSWORD)
    page = client.get(reverse("curation:progress")).content.decode()
    assert "<th>Accepted</th>" in page.split('id="progress"')[1]


def test_review_page_reads_neither_graph_data_nor_groups_once_warm(client, world):
    """The hot page: cached SVG from the row, roles from the session, no JSON graph to parse."""
    client.login(username=world["annotator"].username, password=PASSWORD)
    url = reverse("curation:review", args=[world["fg"].pk])
    assert b"<svg" in client.get(url).content  # the worker's drawing; caches the roles
    with CaptureQueriesContext(connection) as ctx:
        page = client.get(url)
    assert page.status_code == 200 and b"<svg" in page.content
    sqls = [q["sql"] for q in ctx.captured_queries]
    assert not [s for s in sqls if ("generation_flowgraph" in s and ('"data"' in s or "*" in s))
                or "auth_group" in s], sqls
    assert len(sqls) <= 9, sqls


def test_default_cache_is_shared_between_processes(settings):
    assert "locmem" not in settings.CACHES["default"]["BACKEND"].lower()


def test_undo_flash_only_while_the_item_waits_for_reviews(client, world):
    """The first verdict's flash offers `u`; the verdict that completes the item does not (issue #31)."""
    fg = world["fg"]
    login(client, world, "annotator")
    resp = client.post(reverse("curation:submit", args=[fg.pk]), {"verdict": "accept"}, follow=True)
    assert "Press u to undo" in resp.content.decode()
    client.logout()
    services.review_claim_next(annotator=world["annotator_b"], stage=ReviewStage.FLOWGRAPH)
    login(client, world, "annotator_b")
    resp = client.post(reverse("curation:submit", args=[fg.pk]), {"verdict": "accept"}, follow=True)
    body = resp.content.decode()
    assert "Press u to undo" not in body and "all its reviews are in" in body
    queue = client.get(reverse("curation:queue")).content.decode()
    assert "js/queue.js" in queue and 'id="undo-form"' not in queue

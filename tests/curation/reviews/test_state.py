"""One effective state everywhere: the cascade takes excluded items off every list and count,
closes moot claims, and a reversal brings them back; audit events both ways."""
from __future__ import annotations

import re
from collections import Counter

import pytest
from django.test import Client

from curation.agreement import services as agreement
from curation.guidance.guidelines import reason_codes
from curation.models import AuditEvent, Claim, ItemState, ReviewItem, ReviewStage
from curation.reviews import services
from generation.models import CurationStatus, Flowgraph
from tests.conftest import PASSWORD
from tests.curation.factories import build_lineage, draw_graphs
from tests.curation.invariants import check_all

FG, CG, CONV = ReviewStage.FLOWGRAPH, ReviewStage.CONVERSATION_GRAPH, ReviewStage.CONVERSATION


def _review(user, stage, verdict):
    item = services.review_claim_next(annotator=user, stage=stage)
    codes = [reason_codes(stage)[0][0]] if verdict == "reject" else []
    services.review_submit(annotator=user, item_id=item.pk, verdict=verdict, reason_codes=codes)
    return item


@pytest.fixture
def disputed(db, annotator_a, annotator_b, annotator_c, adjudicator):
    """Annotators disagree on the flowgraph, the conversation graph and a conversation; a third
    annotator holds the other conversation."""
    lin = build_lineage(conversations=2)
    services.items_sync()
    for stage in (FG, CG, CONV):
        _review(annotator_a, stage, "accept")
        _review(annotator_b, stage, "reject")
    held = services.review_claim_next(annotator=annotator_c, stage=CONV)
    return lin, held


def test_rejecting_an_ancestor_takes_descendants_off_every_list_and_back(
        disputed, annotator_a, annotator_b, annotator_c, adjudicator, client):
    lin, held = disputed
    fg = ReviewItem.objects.get(stage=FG)
    assert set(services.adjudication_queue().values_list("stage", flat=True)) == {FG, CG, CONV}
    assert Claim.objects.filter(item=held, annotator=annotator_c).exists()

    services.item_resolve(adjudicator=adjudicator, item_id=fg.pk, decision="reject", note="unfaithful")
    # Off the adjudication list, out of the holds, counted once as excluded everywhere.
    assert list(services.adjudication_queue()) == []
    assert services.held_claims(annotator=annotator_c) == []
    assert not Claim.objects.filter(item=held).exists()
    funnel = {r["stage"]: r for r in agreement.stage_funnel()}
    assert funnel[CG]["excluded"] == 1 and funnel[CG]["disagreement"] == 0
    assert funnel[CONV]["excluded"] == 2 and funnel[CONV]["accepted"] == 0 and funnel[CONV]["partial"] == 0
    excluded_events = AuditEvent.objects.filter(action=AuditEvent.Action.EXCLUDE)
    assert Counter(e.item.stage for e in excluded_events) == {CG: 1, CONV: 2}
    assert excluded_events.get(item=held).after["claims_closed"] == 1
    with pytest.raises(services.CurationError, match="Ancestor rejected: Flowgraph"):
        services.item_resolve(adjudicator=adjudicator, item_id=ReviewItem.objects.get(stage=CG).pk,
                              decision="accept", note="x")
    check_all([annotator_a, annotator_b, annotator_c])

    client.login(username="adjudicator", password=PASSWORD)
    page = client.get("/curation/adjudication/").content.decode()
    assert "Conversation graph #" not in page.split("<h2", 2)[1] if "<h2" in page else True
    progress = client.get("/curation/progress/").content.decode()
    assert progress.count("Excluded") >= 1
    cg_page = client.get(f"/curation/adjudication/{ReviewItem.objects.get(stage=CG).pk}/").content.decode()
    assert "Excluded (ancestor rejected)" in cg_page and "Ancestor rejected: Flowgraph #" in cg_page

    # Reversal: the flowgraph accepted after all; descendants return exactly where they stood.
    services.item_resolve(adjudicator=adjudicator, item_id=fg.pk, decision="accept", note="fine after all")
    assert set(services.adjudication_queue().values_list("stage", flat=True)) == {CG, CONV}
    assert ReviewItem.objects.get(pk=held.pk).state == ItemState.OPEN
    restored = AuditEvent.objects.filter(action=AuditEvent.Action.RESTORE)
    assert Counter(e.item.stage for e in restored) == {CG: 1, CONV: 2}
    assert services.review_claim_next(annotator=annotator_c, stage=CONV) == held
    check_all([annotator_a, annotator_b, annotator_c])


def test_queue_page_shows_no_count_that_reveals_a_verdict(disputed, annotator_a):
    client = Client()
    client.login(username="annotator_a", password=PASSWORD)
    page = client.get("/curation/queue/").content.decode()
    assert "Disagreement" not in page and "Awaiting adjudication" not in page and "Decided" not in page
    assert "Available to you" in page
    # Own work only: annotator_a's three accepts.
    assert re.search(r'id="my-progress"', page)


def test_two_graphs_on_one_page_have_distinct_svg_ids(db, adjudicator, annotator_a, annotator_b):
    build_lineage(conversations=1)
    services.items_sync()
    draw_graphs()  # the worker's drawings
    _review(annotator_a, CG, "accept")
    item = _review(annotator_b, CG, "reject")
    client = Client()
    client.login(username="adjudicator", password=PASSWORD)
    page = client.get(f"/curation/adjudication/{item.pk}/").content.decode()
    ids = re.findall(r'<(?:g|svg)[^>]*\bid="([^"]+)"', page)
    if "<svg" not in page:
        pytest.skip("Graphviz is not installed")
    assert page.count("<svg") >= 2
    dupes = [i for i, n in Counter(ids).items() if n > 1]
    assert not dupes, dupes[:5]


@pytest.mark.parametrize("url,who,code", [("/no/such/page/", "annotator_a", 404),
                                          ("/curation/audit/", "annotator_a", 403)])
def test_403_and_404_pages_are_in_the_site_layout(db, annotator_a, url, who, code):
    client = Client()
    client.login(username=who, password=PASSWORD)
    with pytest.MonkeyPatch.context() as mp:
        from django.conf import settings

        mp.setattr(settings, "DEBUG", False)
        resp = client.get(url)
    assert resp.status_code == code
    body = resp.content.decode()
    assert 'class="topbar"' in body and "<nav aria-label=\"Main\">" in body and 'href="/curation/queue/"' in body
    assert f"({code})" in body


def test_jobs_skip_rejected_and_excluded_inputs_and_the_form_says_so(db, admin_user):
    from generation.forms import JobForm
    from generation.models import Origin
    from generation.services import demo_build

    a, b = build_lineage(conversations=1), build_lineage(conversations=1, seed=1)
    Flowgraph.objects.update(origin=Origin.IMPORTED, job=None)
    Flowgraph.objects.filter(pk=a.flowgraph.pk).update(status=CurationStatus.REJECTED)
    label = dict(JobForm().fields["existing"].choices)["flowgraph"]
    assert "(1; skips 1 rejected or excluded in curation)" in label
    job = demo_build(flowgraphs=[a.flowgraph, b.flowgraph], paths=1)
    assert job.config["input_ids"]["flowgraph"] == [b.flowgraph.pk]


def test_release_form_previews_counts_and_refuses_an_empty_release(db, researcher):
    lin = build_lineage(conversations=2)
    client = Client()
    client.login(username="researcher", password=PASSWORD)
    form = {"name": "r", "kind": "curated", "licence": "CC-BY-4.0"}
    resp = client.post("/datasets/new/", form)
    assert resp.status_code == 400 and b"select 0 tests from 0 conversations and 0 graphs" in resp.content
    resp = client.post("/datasets/new/", {**form, "kind": "automatic", "preview": "1"})
    assert resp.status_code == 200
    assert re.search(rf"<strong>{len(lin.tests)}</strong> tests from <strong>2</strong> conversations and"
                     r"\s*<strong>1</strong> graphs", resp.content.decode())


def test_claim_next_syncs_items_only_when_new_artifacts_are_likely(db, annotator_a):
    from curation.reviews.lineage import items_missing_likely

    assert not items_missing_likely()
    build_lineage(conversations=1)
    assert items_missing_likely()
    client = Client()
    client.login(username="annotator_a", password=PASSWORD)
    client.post("/curation/queue/flowgraph/next/")  # the cheap check finds the new artifacts
    assert ReviewItem.objects.filter(stage=FG).count() == 1
    assert not items_missing_likely()


def test_queue_counts_stop_at_the_cap(db, annotator_a):
    from django.utils import timezone

    from curation.reviews import queue

    ReviewItem.objects.bulk_create([ReviewItem(stage=FG, object_id=5000 + i) for i in range(105)])
    now = timezone.now()
    assert queue.count_candidates(stage=FG, annotator_id=annotator_a.pk, now=now) == 105
    assert queue.count_candidates(stage=FG, annotator_id=annotator_a.pk, now=now, cap=100) == 101
    client = Client()
    client.login(username="annotator_a", password=PASSWORD)
    assert "100+" in client.get("/curation/queue/").content.decode()

"""What follows a correction (issue #31 item 5): regenerate marks withhold, tests are extracted
again from a corrected conversation (a frozen release stays byte-identical), regeneration below a
corrected conversation graph, and the notices annotators see on the review page and the queue."""
from __future__ import annotations

import copy

import pytest
from django.urls import reverse
from django.utils import timezone

from curation.models import AuditEvent, Claim, ItemState, ReviewItem, ReviewStage
from curation.releases.exports import file_sources
from curation.releases.services import release_create, release_verify
from curation.reviews import corrections, queue, services
from curation.reviews.explorer import items_bulk
from curation.reviews.state import Effective, effective_of, exclusion_reason
from generation.models import Conversation, CurationStatus, GenerationJob, SampledPath, Test
from generation.pipeline.extract import extract_tests
from tests.curation.factories import build_lineage
from tests.curation.invariants import check_all
from tests.curation.reviews.test_corrections import disagree, submit

FG, CG, CV = ReviewStage.FLOWGRAPH, ReviewStage.CONVERSATION_GRAPH, ReviewStage.CONVERSATION


@pytest.fixture
def lin(db):
    lineage = build_lineage(conversations=2)
    services.items_sync()
    return lineage


def cg_with_a_way_out(data):
    """The conversation graph with a second answer to the refund question: one structural edit."""
    out = copy.deepcopy(data)
    out["nodes"] += [{"id": "N10", "type": "user", "label": "No, thanks"},
                     {"id": "N11", "type": "assistant", "label": "Alright, have a good day."}]
    out["edges"] += [{"id": "E90", "source": "N6", "target": "N10", "label": ""},
                     {"id": "E91", "source": "N10", "target": "N11", "label": ""}]
    return out


def release_bytes(release) -> dict[str, str]:
    return {name: "".join(c if isinstance(c, str) else c.decode() for c in source())
            for name, source in file_sources(release).items()}


def test_a_structural_edit_withholds_what_it_marks_for_regeneration(lin, annotator_a, annotator_b, adjudicator, admin_user):
    conv_items = list(ReviewItem.objects.filter(stage=CV).order_by("pk"))
    assert services.review_claim_next(annotator=annotator_a, stage=CV).pk == conv_items[0].pk
    item = ReviewItem.objects.get(stage=CG)
    corrections.correct(editor=admin_user, item_id=item.pk, payload=cg_with_a_way_out(lin.conversation_graph.data),
                        note="a way out")
    for ci in conv_items:
        ci.refresh_from_db()
        # Excluded (withheld), its claim closed, not offered, the reason on its page.
        assert ci.withheld and effective_of(ci) == Effective.EXCLUDED
        assert "regenerated" in exclusion_reason(ci)
        assert Conversation.objects.get(pk=ci.object_id).status == CurationStatus.EXCLUDED
    assert not Claim.objects.exists()
    assert not list(queue.candidates(stage=CV, annotator_id=annotator_b.pk, now=timezone.now()))
    assert AuditEvent.objects.filter(action="exclude", item__in=conv_items).count() == 2
    # Include again is refused with the reason: the structure they came from is gone.
    result = items_bulk(actor=adjudicator, stage=CV, item_ids=[conv_items[0].pk], action="include")
    assert result["done"] == 0 and "regenerated" in result["refused"][0]
    assert ReviewItem.objects.get(pk=conv_items[0].pk).excluded
    # The corrected graph itself stays in curation, its review state untouched.
    item.refresh_from_db()
    assert not item.excluded and item.state == ItemState.OPEN
    check_all([annotator_a, annotator_b])


def test_a_text_edit_above_changes_no_review_state(lin, annotator_a, annotator_b, admin_user):
    cg = lin.conversation_graph
    data = copy.deepcopy(cg.data)
    next(n for n in data["nodes"] if n["id"] == "N0")["label"] = "Hi! How can I help?"
    before = {i.pk: (i.state, i.excluded) for i in ReviewItem.objects.all()}
    corrections.correct(editor=admin_user, item_id=ReviewItem.objects.get(stage=CG).pk, payload=data, note="warmer")
    assert {i.pk: (i.state, i.excluded) for i in ReviewItem.objects.all()} == before


def test_a_corrected_conversation_gets_its_tests_again_and_a_frozen_release_does_not_change(
        lin, annotator_a, annotator_b, admin_user):
    item = ReviewItem.objects.filter(stage=CV).order_by("pk").first()
    conv = Conversation.objects.get(pk=item.object_id)
    submit(annotator_a, item, "accept")
    submit(annotator_b, item, "accept")
    old_ids = set(Test.objects.filter(conversation=conv).values_list("pk", flat=True))
    assert set(services.curated_tests().values_list("pk", flat=True)) == old_ids
    release = release_create(name="before the correction", kind="curated")
    frozen = release_bytes(release)

    messages = [dict(m) for m in conv.messages]
    messages[-1]["content"] = "Your refund has been issued today."
    corrections.correct(editor=admin_user, item_id=item.pk, payload={"messages": messages}, note="when")
    tests = list(Test.objects.filter(conversation=conv).order_by("position"))
    want = extract_tests(messages)
    assert [(t.position, t.expected["type"]) for t in tests] == [(w["position"], w["expected"]["type"]) for w in want]
    assert tests[-1].expected_text == "Your refund has been issued today." and not old_ids & {t.pk for t in tests}
    # The conversation is still accepted: its new tests are curated, the old ones gone.
    assert {t.status for t in tests} == {CurationStatus.ACCEPTED}
    assert set(services.curated_tests().values_list("pk", flat=True)) == {t.pk for t in tests}
    event = AuditEvent.objects.filter(action="correct", item=item).latest("id")
    assert (event.after["tests_removed"], event.after["tests_made"]) == (len(old_ids), len(tests))

    # A structural edit (the refund dropped: the talk ends at the question) gives fewer tests.
    short = messages[:6]
    corrections.correct(editor=admin_user, item_id=item.pk, payload={"messages": short}, note="no refund")
    assert list(Test.objects.filter(conversation=conv).values_list("position", flat=True)) == [1, 3, 5]
    # The release made before is byte for byte what it was, and still verifies.
    assert release_bytes(release) == frozen and release_verify(release)
    again = release_create(name="after", kind="curated")
    assert "Your refund has been issued." in frozen["tests.jsonl"]  # the old text, as released
    assert "issued" not in release_bytes(again)["tests.jsonl"] and again.entries.count() == 3
    check_all([annotator_a, annotator_b], again)


def test_regenerate_below_a_corrected_conversation_graph(client, lin, annotator_a, annotator_b, adjudicator, admin_user):
    from generation import services as generation

    item = disagree(CG, annotator_a, annotator_b)
    regen = reverse("curation:correct_regenerate", args=[item.pk])
    client.force_login(admin_user)
    r = client.post(regen, follow=True)
    assert b"No structural correction of this conversation graph" in r.content and not GenerationJob.objects.exists()
    corrections.correct(editor=adjudicator, item_id=item.pk, payload=cg_with_a_way_out(lin.conversation_graph.data),
                        note="a way out")
    page = client.get(reverse("curation:correct", args=[item.pk])).content.decode()
    assert 'id="btn-regenerate"' in page and "paths sampled again" in page
    client.force_login(adjudicator)
    assert 'id="btn-regenerate"' not in client.get(reverse("curation:correct", args=[item.pk])).content.decode()
    client.post(regen)
    assert not GenerationJob.objects.exists()  # adjudicators do not start jobs
    client.force_login(admin_user)
    assert client.post(regen).status_code == 302
    job = GenerationJob.objects.get()
    assert job.config["start"] == "paths" and job.config["input_ids"] == {"conversation_graph": [lin.conversation_graph.pk]}
    assert job.config["noise"] == 0 and job.config["conversations"] == "offline"
    old_paths = set(SampledPath.objects.values_list("pk", flat=True))
    old_convs = {c.pk for c in lin.conversations}
    job = generation.job_run_inline(job=job)
    assert job.status == "succeeded", (job.status, job.error)
    # New paths of the corrected graph itself, realised into conversations with their tests.
    new_paths = SampledPath.objects.exclude(pk__in=old_paths)
    assert new_paths.exists() and set(new_paths.values_list("conversation_graph_id", flat=True)) == {lin.conversation_graph.pk}
    new_convs = Conversation.objects.filter(path__in=new_paths)
    assert new_convs.exists() and Test.objects.filter(conversation__in=new_convs).exists()
    services.items_sync()
    fresh = ReviewItem.objects.filter(stage=CV).exclude(object_id__in=old_convs)
    assert fresh.exists() and all(effective_of(i) == Effective.OPEN for i in fresh)
    assert all(i.excluded for i in ReviewItem.objects.filter(stage=CV, object_id__in=old_convs))
    check_all([annotator_a, annotator_b])


def test_a_job_may_start_from_stored_conversation_graphs(lin):
    from generation.services import job_create

    job = job_create(config={"paths": 1, "noise": 0.5}, existing="conversation_graph",
                     existing_ids=[lin.conversation_graph.pk], enqueue=False)
    assert job.config["start"] == "paths" and job.config["noise"] == 0
    states = dict(job.progress.values_list("stage", "state"))
    assert states["conversation_graph"] == "done" and states["noise"] == "skipped" and states["paths"] == "waiting"


# --------------------------------------------------------------------------- what annotators see


def test_the_review_page_and_the_queue_tell_annotators_of_corrections(client, lin, annotator_a, annotator_b, admin_user):
    fg_item = ReviewItem.objects.get(stage=FG)
    data = copy.deepcopy(lin.flowgraph.data)
    next(n for n in data["nodes"] if n["id"] == "N1")["label"] = "What is your order number?"
    corrections.correct(editor=admin_user, item_id=fg_item.pk, payload=data, note="SECRET NOTE: annotator 2 was right")
    assert set(ReviewItem.objects.filter(corrected=True).values_list("stage", flat=True)) == {FG, CG, CV}
    client.force_login(annotator_a)
    held = services.review_claim_next(annotator=annotator_a, stage=FG)
    page = client.get(reverse("curation:review", args=[held.pk])).content.decode()
    assert 'id="correction-notice" data-version="2"' in page and "you review version 2" in page
    assert "SECRET NOTE" not in page
    cv = services.review_claim_next(annotator=annotator_a, stage=CV)
    page = client.get(reverse("curation:review", args=[cv.pk])).content.decode()
    assert "Marked for review again because its parent flowgraph was corrected" in page and "SECRET" not in page
    queue_page = client.get(reverse("curation:queue")).content.decode()
    assert queue_page.count('class="correction-held"') == 2 and 'data-mark="review"' in queue_page
    assert "SECRET" not in queue_page
    # After one's verdict, the version it saw; a later correction makes the current one 3.
    submit_url = reverse("curation:submit", args=[held.pk])
    client.post(submit_url, {"verdict": "accept", "comment": "", "flags": "[]"})
    next(n for n in data["nodes"] if n["id"] == "N1")["label"] = "Your order number, please?"
    corrections.correct(editor=admin_user, item_id=fg_item.pk, payload=data, note="again")
    page = client.get(reverse("curation:review", args=[held.pk])).content.decode()
    assert 'data-version="3"' in page and "you reviewed version 2" in page
    # Nothing to tell on an uncorrected item: no notice (and no query for it).
    other = build_lineage(conversations=1, seed=5)
    services.items_sync()
    plain = ReviewItem.objects.get(stage=FG, object_id=other.flowgraph.pk)
    assert not plain.corrected
    services._claim_upsert(plain, annotator_b, timezone.now())
    client.force_login(annotator_b)
    assert 'id="correction-notice"' not in client.get(reverse("curation:review", args=[plain.pk])).content.decode()


def test_ancestor_statuses_do_not_tell_an_annotator_how_the_others_voted(client, lin, annotator_a, annotator_b, adjudicator):
    """The procedure both annotators reviewed reads the same on the flowgraph's review page
    whether they agreed (Accepted) or disagreed (pending): its status badge is staff-only."""
    proc = ReviewItem.objects.get(stage=ReviewStage.PROCEDURE)
    submit(annotator_a, proc, "accept")
    submit(annotator_b, proc, "accept")
    fg = services.review_claim_next(annotator=annotator_a, stage=FG)
    client.force_login(annotator_a)
    url = reverse("curation:review", args=[fg.pk])
    agreed = client.get(url).content.decode()
    assert "data-lineage-status" not in agreed
    proc.refresh_from_db()
    assert effective_of(proc) == Effective.ACCEPTED
    # The same page with the procedure disputed instead.
    ReviewItem.objects.filter(pk=proc.pk).update(state=ItemState.DISAGREEMENT, decision="", decided_at=None)
    services.cascade_apply(ReviewItem.objects.get(pk=proc.pk))
    disputed = client.get(url).content.decode()
    import re

    csrf = re.compile(r'(csrfmiddlewaretoken" value="|csrf-token" content=")[^"]*"')
    assert csrf.sub("", agreed) == csrf.sub("", disputed)
    # Nor in the explorer's side panel, once the annotator reviewed the flowgraph.
    client.post(reverse("curation:submit", args=[fg.pk]), {"verdict": "accept", "comment": "", "flags": "[]"})
    panel = client.get(reverse("curation:explore_panel", args=[fg.pk]))
    assert panel.status_code == 200 and b'id="procedure"' in panel.content and b"data-lineage-status" not in panel.content
    # Staff still see it.
    client.force_login(adjudicator)
    assert "data-lineage-status" in client.get(reverse("curation:adjudicate", args=[fg.pk])).content.decode()

"""The review workflow through its services: queue rules, verdicts, undo, adjudication, cascade."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from curation.agreement import services as agreement
from curation.models import AuditEvent, Claim, ItemState, Review, ReviewItem, ReviewStage, Skip
from curation.reviews import services
from generation.models import CurationStatus, Flowgraph
from tests.curation.factories import build_lineage

FG = ReviewStage.FLOWGRAPH


def fg_item(lineage) -> ReviewItem:
    return ReviewItem.objects.get(stage=FG, object_id=lineage.flowgraph.pk)


def review(user, stage, verdict="accept", reasons=None):
    item = services.review_claim_next(annotator=user, stage=stage)
    assert item is not None
    codes = reasons if reasons is not None else (["FG-UNFAITHFUL"] if verdict == "reject" else [])
    services.review_submit(annotator=user, item_id=item.pk, verdict=verdict, reason_codes=codes)
    item.refresh_from_db()
    return item


def test_items_sync_creates_one_item_per_reviewable_artifact(db):
    lin = build_lineage(conversations=2, validation=[{"rule": "FG-LEAF-END", "where": "N3", "message": "x"}])
    assert services.items_sync() == 1 + 1 + 1 + 2
    assert services.items_sync() == 0
    item = fg_item(lin)
    assert item.has_warnings and item.required_reviews == 2
    assert not ReviewItem.objects.get(stage=ReviewStage.PROCEDURE).has_warnings


def test_two_accepts_decide_and_set_status(lineage, annotator_a, annotator_b):
    services.items_sync()
    review(annotator_a, FG)
    item = review(annotator_b, FG)
    assert item.state == ItemState.DECIDED and item.decision == "accept"
    assert Flowgraph.objects.get(pk=lineage.flowgraph.pk).status == CurationStatus.ACCEPTED


def test_claim_never_exceeds_required_reviews(lineage, annotator_a, annotator_b, annotator_c):
    services.items_sync()
    a = services.review_claim_next(annotator=annotator_a, stage=FG)
    b = services.review_claim_next(annotator=annotator_b, stage=FG)
    assert a == b
    assert services.review_claim_next(annotator=annotator_c, stage=FG) is None
    # Claiming again returns the item one already holds instead of a second one.
    assert services.review_claim_next(annotator=annotator_a, stage=FG) == a
    assert Claim.objects.filter(item=a).count() == 2


def test_never_the_same_item_twice_even_after_skip(lineage, annotator_a):
    services.items_sync()
    item = services.review_claim_next(annotator=annotator_a, stage=FG)
    services.review_skip(annotator=annotator_a, item_id=item.pk, reason="unsure")
    assert services.review_claim_next(annotator=annotator_a, stage=FG) is None
    assert Skip.objects.filter(item=item).count() == 1
    proc = services.review_claim_next(annotator=annotator_a, stage=ReviewStage.PROCEDURE)
    services.review_submit(annotator=annotator_a, item_id=proc.pk, verdict="accept")
    assert services.review_claim_next(annotator=annotator_a, stage=ReviewStage.PROCEDURE) is None
    with pytest.raises(services.CurationError):
        services.review_submit(annotator=annotator_a, item_id=proc.pk, verdict="accept")


def test_priority_warnings_then_one_review_short(db, annotator_a, annotator_b):
    plain = build_lineage(conversations=1)
    warned = build_lineage(conversations=1, validation=[{"rule": "FG-LEAF-END", "where": "", "message": "m"}])
    third = build_lineage(conversations=1)
    services.items_sync()
    assert services.review_claim_next(annotator=annotator_a, stage=FG).object_id == warned.flowgraph.pk
    # Give `third` one review, so it is one short.
    Claim.objects.all().delete()
    item3 = fg_item(third)
    Claim.objects.create(item=item3, annotator=annotator_b, expires_at=timezone.now() + timedelta(minutes=5))
    services.review_submit(annotator=annotator_b, item_id=item3.pk, verdict="accept")
    order = [i.object_id for i in services.queue_candidates(stage=FG, annotator=annotator_a)]
    assert order == [warned.flowgraph.pk, third.flowgraph.pk, plain.flowgraph.pk]


def test_expired_claims_free_the_slot(lineage, annotator_a, annotator_b, annotator_c):
    services.items_sync()
    item = services.review_claim_next(annotator=annotator_a, stage=FG)
    services.review_claim_next(annotator=annotator_b, stage=FG)
    Claim.objects.filter(annotator=annotator_a).update(claimed_at=timezone.now() - timedelta(hours=2),
                                                     expires_at=timezone.now() - timedelta(hours=1))
    assert services.review_claim_next(annotator=annotator_c, stage=FG) == item
    # a's late verdict no longer fits: b and c hold the two slots.
    with pytest.raises(services.CurationError, match="expired"):
        services.review_submit(annotator=annotator_a, item_id=item.pk, verdict="accept")


def test_reject_needs_a_reason_and_other_needs_a_comment(lineage, annotator_a):
    services.items_sync()
    item = services.review_claim_next(annotator=annotator_a, stage=FG)
    with pytest.raises(services.CurationError, match="reason"):
        services.review_submit(annotator=annotator_a, item_id=item.pk, verdict="reject")
    with pytest.raises(services.CurationError, match="comment"):
        services.review_submit(annotator=annotator_a, item_id=item.pk, verdict="reject", reason_codes=["OTHER"])
    with pytest.raises(services.CurationError, match="Unknown reason"):
        services.review_submit(annotator=annotator_a, item_id=item.pk, verdict="reject", reason_codes=["CV-ORDER"])


def test_disagreement_adjudication_cascade_and_reversal(lineage, annotator_a, annotator_b, adjudicator):
    services.items_sync()
    review(annotator_a, FG, "accept")
    item = review(annotator_b, FG, "reject")
    assert item.state == ItemState.DISAGREEMENT
    assert list(services.adjudication_queue()) == [item]
    with pytest.raises(services.CurationError, match="note"):
        services.item_resolve(adjudicator=adjudicator, item_id=item.pk, decision="reject", note="  ")
    services.item_resolve(adjudicator=adjudicator, item_id=item.pk, decision="reject", note="drops a branch")
    item.refresh_from_db()
    assert item.decision == "reject" and item.state == ItemState.DECIDED
    lineage.flowgraph.refresh_from_db()
    assert lineage.flowgraph.status == CurationStatus.REJECTED
    cg = lineage.conversation_graph
    cg.refresh_from_db()
    assert cg.status == CurationStatus.EXCLUDED
    for model_objs in (lineage.paths, lineage.conversations, lineage.tests):
        for obj in model_objs:
            obj.refresh_from_db()
            assert obj.status == CurationStatus.EXCLUDED
    # The excluded descendants leave the queue.
    assert ReviewItem.objects.get(stage=ReviewStage.CONVERSATION_GRAPH).excluded
    assert services.review_claim_next(annotator=annotator_a, stage=ReviewStage.CONVERSATION_GRAPH) is None
    # Reversal restores everything below.
    services.item_resolve(adjudicator=adjudicator, item_id=item.pk, decision="accept", note="on reflection fine")
    cg.refresh_from_db()
    assert cg.status == CurationStatus.PENDING
    assert all(t.__class__.objects.get(pk=t.pk).status == CurationStatus.PENDING for t in lineage.tests)
    assert not ReviewItem.objects.get(stage=ReviewStage.CONVERSATION_GRAPH).excluded
    actions = list(AuditEvent.objects.filter(item=item).values_list("action", flat=True))
    assert actions.count("claim") == 2 and actions.count("verdict") == 2 and actions.count("resolve") == 2
    resolve = AuditEvent.objects.filter(item=item, action="resolve").order_by("id").last()
    assert resolve.before["decision"] == "reject" and resolve.after["decision"] == "accept"


def test_accepted_conversation_makes_its_tests_curated(lineage, annotator_a, annotator_b):
    services.items_sync()
    conv = lineage.conversations[0]
    for user in (annotator_a, annotator_b):
        Claim.objects.create(item=ReviewItem.objects.get(stage=ReviewStage.CONVERSATION, object_id=conv.pk),
                             annotator=user, expires_at=timezone.now() + timedelta(minutes=5))
        services.review_submit(annotator=user, item_id=ReviewItem.objects.get(
            stage=ReviewStage.CONVERSATION, object_id=conv.pk).pk, verdict="accept")
    assert set(services.curated_tests()) == set(conv.tests.all())
    assert conv.tests.exists()


def test_strict_policy_rejects_on_any_reject(lineage, annotator_a, annotator_b, settings):
    settings.CURATION_POLICIES = {"flowgraph": "strict"}
    services.items_sync()
    review(annotator_a, FG, "accept")
    item = review(annotator_b, FG, "reject")
    assert item.state == ItemState.DECIDED and item.decision == "reject"
    assert not services.adjudication_queue().exists()


def test_per_stage_review_count_setting(db, settings, annotator_a):
    settings.REVIEWS_PER_STAGE = {"procedure": 1}
    build_lineage(conversations=1)
    services.items_sync()
    item = review(annotator_a, ReviewStage.PROCEDURE, "accept")
    assert item.required_reviews == 1 and item.state == ItemState.DECIDED


def test_undo_restores_the_claim_while_reviews_are_awaited(lineage, annotator_a, annotator_b):
    services.items_sync()
    item = review(annotator_a, FG, "accept")
    undone = services.review_undo(annotator=annotator_a)
    assert undone == item and not Review.objects.filter(item=item).exists()
    assert Claim.objects.filter(item=item, annotator=annotator_a).exists()
    services.review_submit(annotator=annotator_a, item_id=item.pk, verdict="reject", reason_codes=["FG-UNFAITHFUL"])
    item = review(annotator_b, FG, "accept")
    assert item.state == ItemState.DISAGREEMENT
    # All reviews are in: undo would reveal the disagreement, so it is refused for both.
    for user in (annotator_a, annotator_b):
        with pytest.raises(services.CurationError, match="All reviews"):
            services.review_undo(annotator=user)
    item.refresh_from_db()
    assert item.state == ItemState.DISAGREEMENT and item.review_count == 2
    undo = AuditEvent.objects.filter(action="undo").get()
    assert undo.before["verdict"] == "accept" and undo.after["review_count"] == 0


def test_reviews_visible_to_is_blind(lineage, annotator_a, annotator_b, adjudicator, researcher, admin_user):
    services.items_sync()
    review(annotator_a, FG, "accept")
    item = fg_item(lineage)
    services.review_claim_next(annotator=annotator_b, stage=FG)
    for user in (annotator_b, adjudicator, researcher):
        assert not services.reviews_visible_to(user).filter(item=item).exists()
    assert services.reviews_visible_to(annotator_a).filter(item=item).count() == 1
    assert services.reviews_visible_to(admin_user).filter(item=item).count() == 1
    services.review_submit(annotator=annotator_b, item_id=item.pk, verdict="reject", reason_codes=["FG-ROOT"])
    # Disagreement: the adjudicator sees both; annotators still only their own (undo is possible).
    assert services.reviews_visible_to(adjudicator).filter(item=item).count() == 2
    assert services.reviews_visible_to(annotator_b).filter(item=item).count() == 1
    assert not services.reviews_visible_to(researcher).filter(item=item).exists()
    assert not Review.objects.get(item=item, annotator=annotator_a).is_blind_for(annotator_a)
    assert Review.objects.get(item=item, annotator=annotator_a).is_blind_for(annotator_b)


def test_an_adjudicator_who_reviewed_cannot_decide(lineage, annotator_a, adjudicator, db):
    from almita_web.roles import ANNOTATOR, assign_roles

    assign_roles(adjudicator, [ANNOTATOR])
    services.items_sync()
    review(annotator_a, FG, "accept")
    item = review(adjudicator, FG, "reject")
    with pytest.raises(services.CurationError, match="another adjudicator"):
        services.item_resolve(adjudicator=adjudicator, item_id=item.pk, decision="accept", note="mine")


def test_rejected_procedure_excludes_items_synced_later(db, annotator_a, annotator_b, adjudicator):
    lin = build_lineage(conversations=1)
    ReviewItem.objects.all().delete()
    from curation.reviews.lineage import items_sync

    items_sync()
    ReviewItem.objects.exclude(stage=ReviewStage.PROCEDURE).delete()
    review(annotator_a, ReviewStage.PROCEDURE, "reject", ["PR-GENERAL"])
    review(annotator_b, ReviewStage.PROCEDURE, "reject", ["PR-GENERAL"])
    items_sync()
    assert ReviewItem.objects.filter(stage=FG, excluded=True).count() == 1
    lin.flowgraph.refresh_from_db()
    assert lin.flowgraph.status == CurationStatus.EXCLUDED
    assert all(a.__class__.objects.get(pk=a.pk).status == CurationStatus.REJECTED for a in lin.apis)


def test_agreement_and_funnel_services(lineage, annotator_a, annotator_b, annotator_c):
    services.items_sync()
    review(annotator_a, FG, "accept")
    review(annotator_b, FG, "reject")
    data = agreement.agreement_for_stage(FG)
    assert data["items"] == 1 and data["reviews"] == 2
    assert data["overall"]["percent"]["value"] == 0.0
    assert data["pairs"][0]["a"] == "annotator_a" and data["pairs"][0]["n"] == 1
    funnel = {row["stage"]: row for row in agreement.stage_funnel()}
    assert funnel["flowgraph"]["disagreement"] == 1 and funnel["conversation"]["items"] == 2
    rows = agreement.verdict_rows(stage=FG)
    assert {r["annotator"] for r in rows} == {"annotator_a", "annotator_b"}
    progress = agreement.annotator_progress()
    assert {(p["annotator"], p["stage"], p["reviews"]) for p in progress} >= {("annotator_a", "flowgraph", 1)}

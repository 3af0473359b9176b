"""Curation invariants recomputed from the raw rows, for the state machine and the parallel run.

Each check reads the review, claim and item rows directly and compares them with what the pages,
queue and releases compute, so a second definition of "excluded" or "awaiting adjudication"
anywhere would show up as a mismatch.
"""
from __future__ import annotations

from collections import Counter, defaultdict

from django.utils import timezone

from curation.agreement import services as agreement
from curation.guidance.services import gold_tests_q
from curation.models import Claim, GoldItem, ItemState, Release, Review, ReviewItem, ReviewStage, Verdict
from curation.reviews import queue, services
from curation.reviews.lineage import STAGE_MODELS, ancestors
from curation.reviews.state import Effective, effective_of
from generation.models import CurationStatus, Test

STATUS_OF = {Effective.ACCEPTED: CurationStatus.ACCEPTED, Effective.REJECTED: CurationStatus.REJECTED,
             Effective.EXCLUDED: CurationStatus.EXCLUDED, Effective.OPEN: CurationStatus.PENDING,
             Effective.AWAITING: CurationStatus.PENDING}


def check_all(annotators, release: Release | None = None) -> None:
    now = timezone.now()
    items = {i.pk: i for i in ReviewItem.objects.all()}
    by_target = {(i.stage, i.object_id): i for i in items.values()}
    reviews = list(Review.objects.values_list("item_id", "annotator_id", "verdict"))
    per_item: dict[int, list[str]] = defaultdict(list)
    for item_id, _a, verdict in reviews:
        per_item[item_id].append(verdict)
    active = Counter(Claim.objects.filter(expires_at__gt=now).values_list("item_id", flat=True))

    for item in items.values():
        verdicts = per_item[item.pk]
        # The stored review count is the number of review rows; state follows from it.
        assert item.review_count == len(verdicts), (item, item.review_count, verdicts)
        assert (item.state == ItemState.OPEN) == (len(verdicts) < item.required_reviews), item
        # Never more reviews + active claims than required.
        assert len(verdicts) + active[item.pk] <= item.required_reviews, (item, verdicts, active[item.pk])
        # Excluded exactly when a reviewable ancestor was rejected, or it or an ancestor was
        # withheld in the explorer.
        above = [a for t in ancestors(item.stage, item.object_id) if (a := by_target.get(t)) is not None]
        rejected_above = any(a.state == ItemState.DECIDED and a.decision == Verdict.REJECT for a in above)
        withheld = item.withheld or any(a.withheld for a in above)
        assert item.excluded == (rejected_above or withheld), (item, item.excluded, rejected_above, withheld)
        # Never Accepted (nor open, awaiting or rejected) under a rejected ancestor.
        if rejected_above:
            assert effective_of(item) == Effective.EXCLUDED, (item, effective_of(item))

    # No claim at all on an item that is not effectively open (the cascade closes them).
    for claim in Claim.objects.all():
        assert effective_of(items[claim.item_id]) == Effective.OPEN, (claim.item_id, effective_of(items[claim.item_id]))

    # Queues and holds never offer an excluded (or otherwise closed) item.
    for user in annotators:
        for stage in ReviewStage.values:
            offered = list(queue.candidates(stage=stage, annotator_id=user.pk, now=now))
            assert all(effective_of(items[i.pk]) == Effective.OPEN for i in offered), stage
            assert queue.count_candidates(stage=stage, annotator_id=user.pk, now=now) == len(offered)
        for claim in services.held_claims(annotator=user, now=now):
            assert effective_of(items[claim.item_id]) == Effective.OPEN

    # The adjudication list is exactly the non-excluded items whose reviews disagree.
    awaiting = {i.pk for i in items.values() if i.state == ItemState.DISAGREEMENT and not i.excluded}
    assert set(services.adjudication_queue().values_list("pk", flat=True)) == awaiting

    # The progress page's funnel equals a count recomputed from the rows.
    expected: dict[str, Counter] = defaultdict(Counter)
    for item in items.values():
        e = effective_of(item)
        c = expected[item.stage]
        c["items"] += 1
        if e == Effective.OPEN:
            c["unreviewed" if not per_item[item.pk] else "partial"] += 1
        else:
            c[{Effective.AWAITING: "disagreement", Effective.ACCEPTED: "accepted", Effective.REJECTED: "rejected",
               Effective.EXCLUDED: "excluded"}[e]] += 1
    for row in agreement.stage_funnel():
        want = expected[row["stage"]]
        for key in ("items", "unreviewed", "partial", "disagreement", "accepted", "rejected", "excluded"):
            assert row[key] == want[key], (row["stage"], key, row[key], want[key])
        assert row["items"] == sum(row[k] for k in ("unreviewed", "partial", "disagreement", "accepted",
                                                    "rejected", "excluded"))

    # Per-annotator progress equals the review rows.
    progress = Counter()
    for row in agreement.annotator_progress():
        progress[(row["annotator"], row["stage"], "reviews")] += row["reviews"]
        progress[(row["annotator"], row["stage"], "accepts")] += row["accepts"]
    names = {u.pk: u.username for u in annotators}
    want_progress = Counter()
    for item_id, annotator_id, verdict in reviews:
        key = (names.get(annotator_id, annotator_id), items[item_id].stage)
        want_progress[key + ("reviews",)] += 1
        want_progress[key + ("accepts",)] += verdict == Verdict.ACCEPT
    assert +progress == +want_progress

    # Agreement counts: complete items and their reviews, neither excluded nor gold; the excluded
    # ones are counted apart (the page says how many were left out).
    gold = set(GoldItem.objects.values_list("item_id", flat=True))
    for stage in ReviewStage.values:
        complete = [i for i in items.values() if i.stage == stage and i.state != ItemState.OPEN and i.pk not in gold]
        live = [i for i in complete if not i.excluded]
        figures = agreement.agreement_for_stage(stage)
        assert figures["items"] == len(live), (stage, figures["items"], len(live))
        assert figures["reviews"] == sum(len(per_item[i.pk]) for i in live)
        assert figures["excluded"] == len(complete) - len(live)

    # Artifact statuses follow the items' effective state; curated tests are exactly the tests of
    # accepted, non-excluded conversations.
    # Every stage is checked: the cascade only descends below artifacts whose exclusion of their
    # descendants changed, so a status it failed to reach would show up here.
    for stage, model in STAGE_MODELS.items():
        for oid, status in model.objects.values_list("pk", "status"):
            item = by_target.get((stage, oid))
            if item is not None:
                assert status == STATUS_OF[effective_of(item)], (stage, oid, status, effective_of(item))
    conv_items = {i.object_id: i for i in items.values() if i.stage == ReviewStage.CONVERSATION}
    accepted_convs = {cid for cid, i in conv_items.items() if effective_of(i) == Effective.ACCEPTED}
    accepted_tests = set(Test.objects.filter(conversation_id__in=accepted_convs).values_list("pk", flat=True))
    assert set(services.curated_tests().values_list("pk", flat=True)) == accepted_tests
    if release is not None:
        # Gold items and everything below them never ship.
        gold_tests = set(Test.objects.filter(gold_tests_q()).values_list("pk", flat=True))
        assert set(release.entries.values_list("test_id", flat=True)) == accepted_tests - gold_tests

"""A stateful property test of curation: random claim, submit, skip, undo, claim expiry, resolve,
reverse, job launch on reviewed inputs and release creation, for 2–4 annotators, with every
invariant of tests/curation/invariants.py checked after every step.

Runs on whichever database the suite is configured for (SQLite by default; CI runs it on Postgres).
"""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from almita_web.roles import ADJUDICATOR, ANNOTATOR
from curation.guidance.guidelines import reason_codes
from curation.models import AuditEvent, Claim, ItemState, ReviewItem, ReviewStage
from curation.releases.services import ReleaseError, release_create
from curation.reviews import services
from generation.models import CurationStatus, Flowgraph, GenerationJob
from generation.services import JobConfigError, demo_build
from tests.conftest import make_user
from tests.curation.factories import build_lineage
from tests.curation.invariants import check_all

STAGES = st.sampled_from(ReviewStage.values)
VERDICTS = st.sampled_from(["accept", "reject"])


class Curation(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self._atomic = transaction.atomic()
        self._atomic.__enter__()
        self.annotators: list = []
        self.release = None
        self.launches = 0

    def teardown(self) -> None:
        transaction.set_rollback(True)
        self._atomic.__exit__(None, None, None)

    @initialize(n=st.integers(2, 4), required=st.sampled_from([2, 2, 1, 3]), lineages=st.integers(1, 2))
    def setup(self, n: int, required: int, lineages: int) -> None:
        for i in range(lineages):
            build_lineage(conversations=2, seed=i)
        services.items_sync()
        ReviewItem.objects.update(required_reviews=min(required, n))
        self.annotators = [make_user(f"sm_annotator_{i}", ANNOTATOR) for i in range(n)]
        self.adjudicator = make_user("sm_adjudicator", ADJUDICATOR)

    def _user(self, index: int):
        return self.annotators[index % len(self.annotators)]

    @rule(who=st.integers(0, 3), stage=STAGES)
    def claim(self, who: int, stage: str) -> None:
        services.review_claim_next(annotator=self._user(who), stage=stage)

    @rule(who=st.integers(0, 3), verdict=VERDICTS, pick=st.integers(0, 5))
    def submit(self, who: int, verdict: str, pick: int) -> None:
        user = self._user(who)
        held = services.held_claims(annotator=user)
        if not held:
            return
        item = held[pick % len(held)].item
        codes = [reason_codes(item.stage)[0][0]] if verdict == "reject" else []
        try:
            services.review_submit(annotator=user, item_id=item.pk, verdict=verdict, reason_codes=codes)
        except services.CurationError:
            pass

    @rule(who=st.integers(0, 3), stage=STAGES, verdict=VERDICTS)
    def claim_and_submit(self, who: int, stage: str, verdict: str) -> None:
        """The common path in one step, so short runs reach disagreements, cascades and reversals."""
        user = self._user(who)
        item = services.review_claim_next(annotator=user, stage=stage)
        if item is not None:
            codes = [reason_codes(stage)[0][0]] if verdict == "reject" else []
            services.review_submit(annotator=user, item_id=item.pk, verdict=verdict, reason_codes=codes)

    @rule(stage=STAGES, verdicts=st.lists(VERDICTS, min_size=2, max_size=4))
    def review_round(self, stage: str, verdicts: list[str]) -> None:
        """Each annotator in turn takes the next item of `stage` and gives it a verdict: completes
        items fast enough for disagreements, cascades and reversals to happen in a short run."""
        for who, verdict in enumerate(verdicts):
            self.claim_and_submit(who, stage, verdict)

    @rule(who=st.integers(0, 3), pick=st.integers(0, 5))
    def skip(self, who: int, pick: int) -> None:
        user = self._user(who)
        held = services.held_claims(annotator=user)
        if held:
            services.review_skip(annotator=user, item_id=held[pick % len(held)].item_id, reason="unsure")

    @rule(who=st.integers(0, 3))
    def undo(self, who: int) -> None:
        try:
            services.review_undo(annotator=self._user(who))
        except services.CurationError:
            pass

    @rule(pick=st.integers(0, 50))
    def expire_claim(self, pick: int) -> None:
        claims = list(Claim.objects.order_by("pk"))
        if claims:
            past = timezone.now() - timedelta(hours=2)
            Claim.objects.filter(pk=claims[pick % len(claims)].pk).update(claimed_at=past - timedelta(minutes=1),
                                                                         expires_at=past)

    @rule(decision=VERDICTS, pick=st.integers(0, 50))
    def resolve(self, decision: str, pick: int) -> None:
        awaiting = list(services.adjudication_queue())
        if awaiting:
            item = awaiting[pick % len(awaiting)]
            services.item_resolve(adjudicator=self.adjudicator, item_id=item.pk, decision=decision, note="decided")
            assert not services.adjudication_queue().filter(pk=item.pk).exists()

    @rule(pick=st.integers(0, 50))
    def reverse(self, pick: int) -> None:
        decided = list(ReviewItem.objects.filter(state=ItemState.DECIDED).order_by("pk"))
        if not decided:
            return
        item = decided[pick % len(decided)]
        flip = "accept" if item.decision == "reject" else "reject"
        before = AuditEvent.objects.filter(action__in=["exclude", "restore"]).count()
        try:
            services.item_resolve(adjudicator=self.adjudicator, item_id=item.pk, decision=flip, note="reversed")
        except services.CurationError:
            assert ReviewItem.objects.get(pk=item.pk).excluded  # the only refusal for a decided item
            return
        # Every item whose exclusion changed got an audit event saying which way.
        changed = AuditEvent.objects.filter(action__in=["exclude", "restore"]).count() - before
        if flip == "reject":
            assert not ReviewItem.objects.filter(pk=item.pk, excluded=True).exists() or changed >= 0

    @precondition(lambda self: self.launches < 2)
    @rule()
    def launch_job(self) -> None:
        self.launches += 1
        flowgraphs = list(Flowgraph.objects.order_by("pk"))
        out = {f.pk for f in flowgraphs if f.status in (CurationStatus.REJECTED, CurationStatus.EXCLUDED)}
        try:
            job = demo_build(flowgraphs=flowgraphs, paths=1, name="sm")
        except JobConfigError:
            assert out == {f.pk for f in flowgraphs}
            return
        job = GenerationJob.objects.get(pk=job.pk)
        used = set(job.config["input_ids"]["flowgraph"])
        assert used == {f.pk for f in flowgraphs} - out
        services.items_sync()
        # Items born under a rejected ancestor are excluded at birth; ReviewItem required counts
        # of the new items follow settings, which may be above the annotator count: cap them.
        ReviewItem.objects.filter(review_count=0, required_reviews__gt=len(self.annotators)).update(
            required_reviews=len(self.annotators))

    @rule()
    def make_release(self) -> None:
        try:
            self.release = release_create(name="sm", kind="curated")
        except ReleaseError as exc:
            assert "select 0 tests" in str(exc)
            assert not services.curated_tests().exists()
            self.release = None

    @invariant()
    def invariants_hold(self) -> None:
        if self.annotators:
            check_all(self.annotators, self.release)
            self.release = None  # a release is compared with the state right after it was made


@pytest.mark.django_db
def test_curation_state_machine() -> None:
    run_state_machine_as_test(
        Curation,
        settings=settings(max_examples=30, stateful_step_count=40, deadline=None,
                          suppress_health_check=list(HealthCheck)),
    )

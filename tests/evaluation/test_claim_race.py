"""Two lanes, one test: a claim (and a lane's write, and a resume's reset) is a compare-and-set
UPDATE that PostgreSQL must re-check against a concurrent change of the same row.

In a worker a project is set, so `TestResult.objects` is scoped through the run's project (a
join), and Django writes such an UPDATE as `... WHERE id IN (SELECT ... WHERE state = 'pending')`.
Under READ COMMITTED a second UPDATE that waited for the first one's row lock re-checks only its
outer WHERE against the new row, never the sub-select: both lanes won the claim and the agent was
asked twice for one test (11 requests for 10 tests in the worker tests, no retry recorded).

Deterministic: lane A holds its claim uncommitted until lane B's UPDATE is seen waiting for the
row lock in pg_stat_activity; then A commits (tests/races.py). PostgreSQL only."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from evaluation import services
from evaluation.models import EvaluationRun, ResultState, RunStatus, TestResult
from tests.evaluation.conftest import make_release
from tests.races import postgres_only, race  # noqa: F401 - fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("postgres_only")]


def one_test_left() -> tuple[EvaluationRun, TestResult]:
    """A running run whose every test but one is done."""
    gold = services.reference_agents_ensure()[0]
    run = services.run_create(agent=gold, release=make_release(), similarity="lexical", start=False)
    services.run_start(run_id=run.pk, dispatch=False)
    rows = TestResult._base_manager.filter(run=run).order_by("id")
    last = rows.last()
    rows.exclude(pk=last.pk).update(state=ResultState.DONE)
    run.refresh_from_db()
    return run, last


def test_two_lanes_never_both_claim_the_last_test():
    run, last = one_test_left()
    claim = lambda: services.claim_pending(TestResult, run.pk, related=("entry",))  # noqa: E731
    a, b = race(run.project_id, claim, claim)
    assert isinstance(a, TestResult) and a.pk == last.pk
    assert b is None, "the second lane claimed a test the first one holds: the agent would be asked twice"
    assert TestResult._base_manager.get(pk=last.pk).attempts == 1


def test_a_resume_never_puts_back_a_test_a_lane_just_finished():
    run, last = one_test_left()
    long_ago = timezone.now() - timedelta(days=1)  # a claim old enough to count as stale
    TestResult._base_manager.filter(pk=last.pk).update(state=ResultState.RUNNING, claimed_at=long_ago)

    def lane_writes() -> int:  # the lane holding the claim stores its answer, a moment before the resume
        return TestResult.objects.filter(pk=last.pk, state=ResultState.RUNNING, claimed_at=long_ago).update(
            state=ResultState.DONE, finished_at=timezone.now())

    def resume() -> int:
        return services.run_resume(run=EvaluationRun.objects.get(pk=run.pk), dispatch=False)[1]

    written, _ = race(run.project_id, lane_writes, resume)
    assert written == 1
    row = TestResult._base_manager.get(pk=last.pk)
    assert row.state == ResultState.DONE, "the resume put a finished test back: it would be asked again"
    assert EvaluationRun._base_manager.get(pk=run.pk).status == RunStatus.RUNNING

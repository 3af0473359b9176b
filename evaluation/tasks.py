"""Thin Celery tasks for evaluation runs: they take ids and call one service."""
from __future__ import annotations

from celery import shared_task

from evaluation import services
from projects.celery import in_project_of


@shared_task(ignore_result=True)
@in_project_of("evaluation.EvaluationRun", "run_id")
def evaluate_lane(run_id: int) -> None:
    """One lane of a run: claim a pending test (conditional update), evaluate it, store its result
    keyed on (run, test); repeat until none is left; the last lane finishes the run.

    A run has at most `run.concurrency` lanes, which is its concurrency bound. A lane loops instead
    of enqueueing a successor per test: a broker round trip per test would cost wall time, and the
    filesystem broker can hand a worker a message file that its own producer thread has not
    finished writing. Idempotent: a redelivered lane (worker killed) just claims the next pending
    test; a test claimed by the dead lane is picked up again by `run_resume` once its claim is stale.
    """
    services.run_lane(run_id=run_id)


@shared_task(ignore_result=True)
@in_project_of("evaluation.SessionRun", "run_id")
def session_lane(run_id: int) -> None:
    """One lane of a session run: claim a pending session, simulate and judge it, store it; repeat.
    Idempotent like evaluate_lane (a redelivered lane claims the next pending session)."""
    from evaluation import session_services

    session_services.session_run_lane(run_id=run_id)

"""Thin Celery tasks for evaluation runs: they take ids and call one service."""
from __future__ import annotations

from celery import shared_task

from evaluation import services


@shared_task(ignore_result=True)
def evaluate_start(run_id: int) -> None:
    """Idempotent: only a queued run is started; a duplicate message does nothing."""
    services.run_start(run_id=run_id)


@shared_task(ignore_result=True)
def evaluate_step(run_id: int) -> None:
    """One lane step: claim one pending test (conditional update), evaluate it, store its result
    keyed on (run, test), then enqueue the lane's next step. A redelivered message just claims
    another pending test; the last lane to find none finishes the run."""
    while services.run_step(run_id=run_id):
        if not evaluate_step.app.conf.task_always_eager:
            evaluate_step.delay(run_id)
            return
        # Eager mode (no broker): keep looping here instead of recursing one level per test.

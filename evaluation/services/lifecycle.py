"""Run lifecycle, shared by turn-level runs (TestResult rows, one per test) and session runs
(SessionResult rows, one per conversation): both have `results` with a `state` column.

Start (queued -> running, lanes enqueued after commit), cancel, resume (failed/cancelled: retry;
running: pick up stale claims), claim one pending row with a conditional update, fail, finish."""
from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

import webhooks

from evaluation.models import ResultState, RunStatus
from projects.scoping import rows_to_write


def lanes_to_dispatch(run) -> int:
    pending = run.results.filter(state=ResultState.PENDING).count()
    return max(1, min(run.concurrency, pending)) if pending else 1


def dispatch_lanes(task, run_id: int, lanes: int) -> None:
    """Enqueue `lanes` copies of the Celery lane task once the transaction commits."""

    def send() -> None:
        for _ in range(lanes):
            task.delay(run_id)

    transaction.on_commit(send)


def start_run(model, run_id: int, dispatch_fn) -> int:
    """queued -> running; `dispatch_fn(run_id, lanes)` after commit. Returns the number of lanes."""
    run = model.objects.select_for_update().get(pk=run_id)
    if run.status != RunStatus.QUEUED:
        return 0  # already started: its lanes are out
    run.check_transition(RunStatus.RUNNING)
    run.status = RunStatus.RUNNING
    run.started_at = timezone.now()
    run.save(update_fields=["status", "started_at"])
    lanes = lanes_to_dispatch(run)
    if dispatch_fn:
        dispatch_fn(run.pk, lanes)
    return lanes


def cancel_run(run):
    run = type(run).objects.select_for_update().get(pk=run.pk)
    run.check_transition(RunStatus.CANCELLED)
    run.status = RunStatus.CANCELLED
    run.finished_at = timezone.now()
    run.done = run.results.filter(state=ResultState.DONE).count()
    run.save(update_fields=["status", "finished_at", "done"])
    return run


def stale_before(calls: int = 1) -> Any:
    """A claim older than this belongs to a lane that died (`calls` whole calls with all their
    retries take less)."""
    budget = settings.OPENAI_TIMEOUT * (settings.LLM_MAX_RETRIES + 1) * calls + 120
    return timezone.now() - timedelta(seconds=budget)


def resume_run(run, *, stale_calls: int, dispatch_fn) -> tuple[Any, int]:
    """Failed or cancelled: retry unfinished and failed items. Running: pick up items whose lane
    died (claims older than `stale_calls` calls). Returns (run, lanes dispatched)."""
    run = type(run).objects.select_for_update().get(pk=run.pk)
    # Compare-and-set: a lane may be writing one of them (projects.scoping.rows_to_write says why).
    results = rows_to_write(run.results.model).filter(run_id=run.pk)
    if run.status == RunStatus.RUNNING:
        results.filter(state=ResultState.RUNNING, claimed_at__lt=stale_before(stale_calls)).update(
            state=ResultState.PENDING, claimed_at=None)
    else:
        run.check_transition(RunStatus.RUNNING)
        results.filter(state__in=[ResultState.RUNNING, ResultState.FAILED]).update(
            state=ResultState.PENDING, claimed_at=None)
        run.status = RunStatus.RUNNING
        run.error = ""
        run.finished_at = None
        run.started_at = run.started_at or timezone.now()
        run.save(update_fields=["status", "error", "finished_at", "started_at"])
    lanes = lanes_to_dispatch(run)
    if dispatch_fn:
        dispatch_fn(run.pk, lanes)
    return run, lanes


def claim_pending(model, run_id: int, *, related: tuple[str, ...] = ()):
    """Claim one pending result row of `model` (fetched with `related` joined). None: nothing
    pending. False: lost every race; try again later."""
    for _ in range(20):
        candidates = list(model.objects.filter(run_id=run_id, state=ResultState.PENDING)
                          .order_by("id").values_list("pk", flat=True)[:8])
        if not candidates:
            return None
        pk = random.choice(candidates)  # spread concurrent lanes over different rows
        # Its conditions in the UPDATE's own WHERE (rows_to_write): with the scoped manager's JOIN,
        # PostgreSQL let two lanes both win one test (tests/evaluation/test_claim_race.py).
        won = rows_to_write(model).filter(pk=pk, state=ResultState.PENDING).update(
            state=ResultState.RUNNING, claimed_at=timezone.now(), attempts=F("attempts") + 1)
        if won == 1:
            return model.objects.select_related(*related).get(pk=pk)
    return False


def fail_run(model, run_id: int, error: str) -> None:
    run = model.objects.select_for_update().get(pk=run_id)
    if run.can_move_to(RunStatus.FAILED):
        run.status = RunStatus.FAILED
        run.error = error[:4000]
        run.finished_at = timezone.now()
        run.done = run.results.filter(state=ResultState.DONE).count()
        run.save(update_fields=["status", "error", "finished_at", "done"])
        webhooks.emit("evaluation.finished", **_finished_event(run, run.metrics or {}))


def finish_run(model, run_id: int, *, report_fn, done_key: str, failed_message: str) -> bool:
    """When no result is pending or in flight: store the report (`report_fn(run)`, with `failed`
    and `done_key` counts) and close the run (idempotent): failed with the report's `fail_reason`
    when it has one (evaluation/run_health.py), else failed if any result failed."""
    run = model.objects.get(pk=run_id)
    if run.status != RunStatus.RUNNING or run.results.filter(
            state__in=[ResultState.PENDING, ResultState.RUNNING]).exists():
        return False
    report = report_fn(run)
    with transaction.atomic():
        run = model.objects.select_for_update().get(pk=run_id)
        if run.status != RunStatus.RUNNING:
            return False
        run.metrics, run.done, run.finished_at = report, report[done_key], timezone.now()
        reasons = [report["fail_reason"]] if report.get("fail_reason") else []
        if report["failed"]:
            reasons.append(failed_message.format(failed=report["failed"]))
        if reasons:
            run.status = RunStatus.FAILED
            run.error = "; ".join(reasons)
        else:
            run.status = RunStatus.SUCCEEDED
        run.save(update_fields=["metrics", "done", "finished_at", "status", "error"])
        webhooks.emit("evaluation.finished", **_finished_event(run, report))
    return True


def _finished_event(run, report: dict[str, Any]) -> dict[str, Any]:
    """The evaluation.finished webhook payload (issue #18)."""
    return {"kind": run._meta.model_name, "run_id": run.pk, "status": run.status, "agent": run.agent.name,
            "release_id": run.release_id, "error": run.error,
            "metrics": {k: v.get("value") for k, v in (report.get("metrics") or {}).items()}}

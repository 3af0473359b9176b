"""Honest job states: when a job has failed, and the watchdog for jobs that stopped moving.

A job ends `failed` when a stage has zero survivors (nothing downstream can run) or when any
item's code raised (`stage_error` from a stage function, `task_error` from the task around it),
with a message naming the stage and its top reasons. Otherwise it succeeds, and the losses per
stage are on the job page. The watchdog fails a job that made no progress for JOB_STALL_MINUTES.
"""
from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Max
from django.utils import timezone

from generation.models import BatchStatus, Discard, LLMBatch, GenerationJob, JobStatus, LLMCall, StageProgress, StageState

RAISED_REASONS = ("stage_error", "task_error")


def stage_dead(sp: StageProgress) -> bool:
    """A finished stage that had work and kept none of it."""
    return sp.state == StageState.DONE and sp.total > 0 and sp.done >= sp.total and sp.passed == 0


def top_reasons(job_id: int, stage: str, n: int = 3) -> str:
    rows = (Discard.objects.filter(job_id=job_id, stage=stage).values("reason").annotate(c=Count("id"))
            .order_by("-c", "reason")[:n])
    return ", ".join(f"{r['reason']} ×{r['c']}" for r in rows) or "no reason recorded"


def stage_failure_message(sp: StageProgress) -> str:
    return (f"stage {sp.stage}: no item survived ({sp.generated} generated, {sp.discarded} discarded, "
            f"{sp.failed} failed); top reasons: {top_reasons(sp.job_id, sp.stage)}")


def items_raised_message(job_id: int) -> str:
    """'' when no item raised; else which stages had items that raised, with the first error."""
    rows = list(Discard.objects.filter(job_id=job_id, reason__in=RAISED_REASONS).order_by("id")
                .values("stage", "detail"))
    if not rows:
        return ""
    by_stage = Counter(r["stage"] for r in rows)
    where = ", ".join(f"{stage} ({n})" for stage, n in by_stage.items())
    return f"{len(rows)} item(s) raised an error in stage {where}; first: {rows[0]['detail'][:300]}"


def last_progress(job: GenerationJob) -> datetime:
    """The latest sign of life: a status move, a stage start or finish, or an LLM call."""
    marks = [job.progress_at, job.started_at, job.created_at]
    stages = StageProgress.objects.filter(job=job).aggregate(s=Max("started_at"), f=Max("finished_at"))
    marks += [stages["s"], stages["f"], LLMCall.objects.filter(job=job).aggregate(c=Max("created_at"))["c"],
              # Batch mode: a batch the poll still asks about is progress (its window is 24 h).
              LLMBatch.objects.filter(job=job, status=BatchStatus.SUBMITTED).aggregate(p=Max("polled_at"))["p"]]
    return max(m for m in marks if m is not None)


def job_watchdog(job: GenerationJob, *, now: datetime | None = None) -> bool:
    """Fail `job` when it is unfinished and has not moved for JOB_STALL_MINUTES; True when it did."""
    from generation.llm.accounting import calls_mark_lost
    from generation.services.jobs import job_fail

    if job.is_terminal:
        return False
    now = now or timezone.now()
    limit = timedelta(minutes=settings.JOB_STALL_MINUTES)
    idle = now - last_progress(job)
    if idle <= limit:
        return False
    calls_mark_lost(job.pk)
    open_stage = (StageProgress.objects.filter(job=job).exclude(state__in=[StageState.DONE, StageState.SKIPPED])
                  .values("stage", "state", "done", "total").first())
    where = (f"stage {open_stage['stage']} {open_stage['state']} at {open_stage['done']}/{open_stage['total']}"
             if open_stage else "no open stage")
    return job_fail(job_id=job.pk, error=(
        f"no progress for {int(idle.total_seconds() // 60)} minutes (JOB_STALL_MINUTES="
        f"{settings.JOB_STALL_MINUTES}); {where}. Is a worker running?"))


def jobs_watchdog() -> int:
    """Run the watchdog over every unfinished job; returns how many it failed.

    A job that has not moved for a minute but is not yet stalled gets the items whose messages
    may be lost re-sent first (a worker that died holding reserved messages it never started).
    """
    from generation.services.jobs import PLANNING_STALE, job_resume

    failed = 0
    for job in GenerationJob.objects.filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.CANCELLING]):
        if job_watchdog(job):
            failed += 1
        elif timezone.now() - last_progress(job) > PLANNING_STALE:
            job_resume(job=job, only_lost=True)
    return failed

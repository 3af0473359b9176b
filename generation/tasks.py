"""Celery tasks: thin wrappers that take ids and call one service (see services/jobs.py for the flow)."""
from __future__ import annotations

import logging

from celery import current_app, shared_task
from celery.signals import worker_ready
from django.db import OperationalError

from generation import services
from generation.redact import redact

logger = logging.getLogger(__name__)

# Database hiccups (SQLite busy, a Postgres restart) are the only errors retried here: the LLM
# layer retries its own transient errors, and an item never raises for an LLM failure.
DB_RETRY = {"autoretry_for": (OperationalError,), "retry_backoff": 0.5, "retry_backoff_max": 10, "max_retries": 8}


@shared_task(name="generation.job_advance", **DB_RETRY)
def job_advance_task(job_id: int) -> None:
    """Move a job forward: claim and publish the next stage, or finish the job.

    Idempotent: a stage is claimed by a conditional update, so running this twice publishes a
    stage's items once (except after a crash mid-publishing, where duplicates are harmless).
    Any other exception fails the job with the error instead of leaving it running.
    """
    try:
        # One producer for the whole fan-out instead of one taken from the pool per item.
        with current_app.producer_or_acquire() as producer:
            services.job_advance(job_id=job_id, publish=lambda stage, key: item_run_task.apply_async(
                (job_id, stage, key), producer=producer))
    except OperationalError:
        raise
    except Exception as exc:  # noqa: BLE001 - recorded on the job, never left running
        logger.exception("job_advance %s raised", job_id)
        services.job_fail(job_id=job_id, error=redact(f"advancing the job raised {type(exc).__name__}: {exc}"))


@shared_task(name="generation.item_run", bind=True, **DB_RETRY)
def item_run_task(self, job_id: int, stage: str, key: str) -> None:
    """Process one work item of one stage.

    Idempotent: results are written under the job-scoped key and the item is marked done in the
    same transaction; a second run finds the mark and writes nothing. An exception marks the item
    failed with the error (the job then ends failed), so the stage still completes.
    """
    try:
        done = services.item_run(job_id=job_id, stage=stage, key=key, delivery=self.request.id)
    except OperationalError:
        raise
    except Exception as exc:  # noqa: BLE001 - recorded on the item
        logger.exception("item %s of job %s raised", key, job_id)
        done = services.item_fail(job_id=job_id, stage=stage, key=key, error=f"{type(exc).__name__}: {exc}")
    if done:
        job_advance_task.delay(job_id)


@shared_task(name="generation.jobs_recover", **DB_RETRY)
def jobs_recover_task() -> None:
    """Re-publish the unfinished work of every unfinished job (sent when a worker starts).

    A worker killed with SIGKILL takes its reserved messages with it (the filesystem broker
    deletes a message when it is read; Redis only restores it after the visibility timeout), so a
    restarted worker re-publishes every item not yet marked done. Items are idempotent, so one
    that is also still running elsewhere is merely processed twice and written once. The dead
    worker's in-flight LLM rows are marked lost_in_flight first.
    """
    services.jobs_recover()


@shared_task(name="generation.jobs_watchdog", **DB_RETRY)
def jobs_watchdog_task() -> None:
    """Fail unfinished jobs with no progress for JOB_STALL_MINUTES (idempotent: a failed job stays failed)."""
    services.jobs_watchdog()


@worker_ready.connect
def _recover_on_start(sender=None, **_: object) -> None:
    jobs_recover_task.delay()
    jobs_watchdog_task.delay()

"""Celery tasks: thin wrappers that take ids and call one service (see services/jobs.py for the flow)."""
from __future__ import annotations

import logging
import threading

from celery import current_app, shared_task
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings
from django.db import OperationalError

from generation import services
from generation.stages import needs_llm
from generation.redact import redact
from projects.celery import in_project_of

logger = logging.getLogger(__name__)

# Database hiccups (SQLite busy, a Postgres restart) are the only errors retried here: the LLM
# layer retries its own transient errors, and an item never raises for an LLM failure.
DB_RETRY = {"autoretry_for": (OperationalError,), "retry_backoff": 0.5, "retry_backoff_max": 10, "max_retries": 8}


@shared_task(name="generation.job_advance", **DB_RETRY)
@in_project_of("generation.GenerationJob", "job_id")
def job_advance_task(job_id: int) -> None:
    """Move a job forward: claim and publish the next stage, or finish the job.

    Idempotent: a stage is claimed by a conditional update, so running this twice publishes a
    stage's items once (after a crash mid-publishing they may go out twice; a second delivery of
    an item is a no-op, see services/claims.py).
    Any other exception fails the job with the error instead of leaving it running.
    """
    try:
        # One producer for the whole fan-out instead of one taken from the pool per item.
        with current_app.producer_or_acquire() as producer:
            services.job_advance(job_id=job_id, publish=BatchPublisher(job_id, producer))
    except OperationalError:
        raise
    except Exception as exc:  # noqa: BLE001 - recorded on the job, never left running
        logger.exception("job_advance %s raised", job_id)
        services.job_fail(job_id=job_id, error=redact(f"advancing the job raised {type(exc).__name__}: {exc}"))


# Items of stages that make no LLM call are short and CPU-bound: they go out this many to a task,
# which saves a message and a task's overhead per item. LLM items go one to a task (they wait).
OFFLINE_BATCH = 8


class BatchPublisher:
    """`publish(stage, key)` for job_advance: one task per LLM item, OFFLINE_BATCH offline items per task.

    job_advance calls `flush()` when a stage's keys are all given, before it marks the stage running.
    """

    def __init__(self, job_id: int, producer) -> None:
        self.job_id = job_id
        self.producer = producer
        self.pending: dict[str, list[str]] = {}
        self._config: dict | None = None

    def _batch_size(self, stage: str) -> int:
        if self._config is None:
            from generation.models import GenerationJob

            self._config = GenerationJob.objects.only("config").get(pk=self.job_id).config
        return 1 if needs_llm(stage, self._config) else OFFLINE_BATCH

    def __call__(self, stage: str, key: str) -> None:
        keys = self.pending.setdefault(stage, [])
        keys.append(key)
        if len(keys) >= self._batch_size(stage):
            self._send(stage, keys)
            self.pending[stage] = []

    def _send(self, stage: str, keys: list[str]) -> None:
        if len(keys) == 1:
            item_run_task.apply_async((self.job_id, stage, keys[0]), producer=self.producer)
        elif keys:
            items_run_task.apply_async((self.job_id, stage, keys), producer=self.producer)

    def flush(self) -> None:
        for stage, keys in self.pending.items():
            self._send(stage, keys)
        self.pending = {}


def _run_item(job_id: int, stage: str, key: str, delivery: str | None) -> bool:
    try:
        return services.item_run(job_id=job_id, stage=stage, key=key, delivery=delivery)
    except OperationalError:
        raise
    except Exception as exc:  # noqa: BLE001 - recorded on the item
        logger.exception("item %s of job %s raised", key, job_id)
        return services.item_fail(job_id=job_id, stage=stage, key=key, error=f"{type(exc).__name__}: {exc}")


@shared_task(name="generation.item_run", bind=True, **DB_RETRY)
@in_project_of("generation.GenerationJob", "job_id")
def item_run_task(self, job_id: int, stage: str, key: str) -> None:
    """Process one work item of one stage.

    Idempotent: only the delivery that claims the item processes it (services/claims.py), and a
    finished item is marked done on its stage, so a second delivery writes nothing and calls
    nothing. An exception marks the item failed with the error (the job then ends failed), so
    the stage still completes.
    """
    if _run_item(job_id, stage, key, self.request.id):
        job_advance_task.delay(job_id)


@shared_task(name="generation.items_run", bind=True, **DB_RETRY)
@in_project_of("generation.GenerationJob", "job_id")
def items_run_task(self, job_id: int, stage: str, keys: list[str]) -> None:
    """Process several items of one stage in turn (offline stages; see BatchPublisher), each as item_run_task."""
    done = False
    for key in keys:
        done = _run_item(job_id, stage, key, self.request.id) or done
    if done:
        job_advance_task.delay(job_id)


@shared_task(name="generation.jobs_recover", **DB_RETRY)
def jobs_recover_task() -> None:
    """Re-publish the unfinished work of every unfinished job (sent when a worker starts).

    A worker killed with SIGKILL takes its reserved messages with it (the filesystem broker
    deletes a message when it is read; Redis only restores it after the visibility timeout), so a
    starting worker re-publishes the unfinished items a dead worker may have held: those it had
    claimed, and — when such a worker exists, or the job made no progress for a minute — the ones
    nobody claimed yet. A worker joining a healthy job publishes nothing. A copy of an item that
    is still queued or running elsewhere is a no-op (services/claims.py). The dead worker's
    in-flight LLM rows are marked lost_in_flight first.
    """
    services.jobs_recover()


@shared_task(name="generation.jobs_watchdog", **DB_RETRY)
def jobs_watchdog_task() -> None:
    """Fail unfinished jobs with no progress for JOB_STALL_MINUTES (idempotent: a failed job stays failed)."""
    services.jobs_watchdog()


def recovery_round() -> None:
    """One round of what the recovery thread does: mark dead workers' calls lost, re-send what they
    held, fail stalled jobs. Each step is idempotent; any error is logged and the next round retries."""
    from django.db import close_old_connections

    close_old_connections()
    try:
        services.jobs_recover()
        services.jobs_watchdog()
    except Exception:  # noqa: BLE001 - a database hiccup must not end the thread
        logger.exception("periodic job recovery failed; retrying in %s s", settings.JOB_RECOVERY_SECONDS)
    finally:
        close_old_connections()


class RecoveryThread(threading.Thread):
    """Runs `recovery_round` every JOB_RECOVERY_SECONDS in every live worker process.

    Start-up recovery alone left a job stalled when a worker was SIGKILLed while another lived on
    (nobody started, so nobody looked): now a surviving worker takes the dead one's items within
    a round (its claims, its in-flight calls, the messages it had reserved). It runs in the
    worker's main process, outside the task pool, so a pool busy with long items delays it not.
    """

    def __init__(self, interval: float) -> None:
        super().__init__(name="job-recovery", daemon=True)
        self.interval = interval
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            recovery_round()
        from django.db import connection

        connection.close()


_recovery: RecoveryThread | None = None


@shared_task(name="generation.batches_poll", **DB_RETRY)
def batches_poll_task() -> None:
    """Batch mode: submit waiting requests, read finished batches, run their items again.

    Idempotent: requests are claimed into a batch and a finished batch into reading by conditional
    updates, so two polls at once submit and read each once; an item run twice is a no-op (claims).
    Re-schedules itself while requests wait or batches are open (beat also runs it).
    """
    from generation.llm.batches import batches_poll, batches_poll_soon

    rerun, more = batches_poll()
    for job_id, stage, key in rerun:
        item_run_task.delay(job_id, stage, key)
    if more:
        batches_poll_soon()


def _warm_llm_client() -> None:
    """Build the site endpoint's client (its TLS context and connection pool) before any item asks.

    Built by the first call instead, it was made while every other item thread of the stage waited
    on the client lock: bench/generation.py --part overhead at C 16 (ideal 2 s) lost about 0.2 s
    to it, the LLM stage 1.28-1.36 x ideal (floor 1.25). Before projects the batch poll at start
    built it by the way; the poll now asks only for projects with batch work."""
    from generation.llm.config import endpoint_api_key, endpoint_base_url
    from generation.llm.providers import client_for

    try:
        base_url = endpoint_base_url()
        if base_url:
            client_for(base_url, endpoint_api_key(), settings.OPENAI_TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - the first call builds it (and reports what is wrong)
        logger.warning("LLM client not built at start: %s", type(exc).__name__)


@worker_ready.connect
def _recover_on_start(sender=None, **_: object) -> None:
    global _recovery
    jobs_recover_task.delay()
    jobs_watchdog_task.delay()
    batches_poll_task.delay()  # batch mode: batches left open by a stopped worker are read again
    _warm_llm_client()
    if _recovery is None and settings.JOB_RECOVERY_SECONDS > 0:
        _recovery = RecoveryThread(settings.JOB_RECOVERY_SECONDS)
        _recovery.start()


@worker_shutdown.connect
def _stop_recovery(sender=None, **_: object) -> None:
    if _recovery is not None:
        _recovery.stopped.set()


@shared_task(name="generation.graphs_draw", **DB_RETRY)
def graphs_draw_task(label: str, ids: list[int]) -> int:
    """Draw newly stored graphs (generation.drawings). Idempotent: drawn rows are left alone."""
    from generation.drawings import graphs_draw

    return graphs_draw(label, ids)


@shared_task(name="generation.drawing_make")
def drawing_make_task(kind: str, key: str, dot: str) -> bool:
    """Draw a page's DOT text into the cache (generation.drawing_cache; dot is time-bounded)."""
    from generation.drawing_cache import drawing_make

    return not drawing_make(kind, key, dot)["error"]

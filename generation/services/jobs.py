"""Generation workflows: create, advance, cancel and inspect jobs; import; the demo builder.

How a job runs (no chords, no result backend — progress lives on StageProgress rows):

1. `job_create` stores the job, one StageProgress per stage, and any imported items, then
   enqueues `job_advance` after commit.
2. `job_advance` finds the first unfinished stage. A waiting stage is *claimed*
   (waiting → planning, a conditional update only one caller wins), its work items are
   published (one task per item, ids only), then it becomes running. A running stage whose items
   are all done becomes done and the loop moves on; when no stage is left the job succeeds.
3. `item_run` claims the item, processes it outside any transaction (LLM calls), writes its rows
   keyed on (job, key), then records its outcome in `StageProgress.items` with one conditional
   UPDATE (which also marks the stage done after the last item). The caller then enqueues
   `job_advance`.

Exactly once: every delivery of an item's task first claims the item (services/claims.py: an
INSERT on a unique row, or a compare-and-swap takeover of a dead worker's claim); only the winner
calls the LLM and writes. An item already in `items` writes nothing; rows are keyed on the
job-scoped key (a DB unique constraint). So a redelivered task (acks_late, SIGKILLed worker), a
re-publishing (`job_resume`, the start-up recovery) or a second worker process finishes the job
with one LLM call per item and no duplicates. A redelivered `item_run` for a finished stage
re-enqueues `job_advance`, which is safe to run any number of times. Offline stages go out
several items to a task (tasks.BatchPublisher).
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any, Callable

from django.db import transaction
from django.utils import timezone

import webhooks
from generation import llm
from generation.models import (
    ConversationGraph,
    Flowgraph,
    GenerationJob,
    IllegalTransition,
    Intent,
    JobStatus,
    Origin,
    Procedure,
    StageProgress,
    StageState,
)
from generation.services.claims import claim_lost, claims_by_key, owner_dead
from generation.services.config import JobConfigError, job_config_normalise, llm_stages
from generation.services.importing import _import_rows, import_parse
from generation.services.health import items_raised_message, stage_dead, stage_failure_message
from generation.services.items import item_run
from generation.services.reporting import job_counters
from generation.stages import STAGE_ORDER, needs_llm, plan
from generation.llm.config import endpoint_base_url

Publisher = Callable[[str, str], None]

# A stage left in `planning` this long was claimed by a worker that died while publishing.
PLANNING_STALE = timedelta(seconds=60)


# Rows already in the database (imported, or from any job) a job can start from:
# level → (the first stage to run, what the level is called on the page).
EXISTING_LEVELS: dict[str, tuple[str, str]] = {
    "intents": ("procedures", "intents"),
    "procedures": ("apis", "procedures"),
    "apis": ("flowgraph", "procedures with APIs"),
    "flowgraph": ("conversation_graph", "flowgraphs"),
    # Paths sampled again from stored conversation graphs (e.g. one an adjudicator corrected).
    "conversation_graph": ("paths", "conversation graphs"),
}


def existing_imports(level: str) -> Any:
    """Imported rows that belong to no job, at one level (for 'start from what was imported')."""
    base = {"origin": Origin.IMPORTED, "job__isnull": True}
    if level == "intents":
        return Intent.objects.filter(**base)
    if level == "procedures":
        return Procedure.objects.filter(**base)
    if level == "apis":
        return Procedure.objects.filter(**base, apis__isnull=False).distinct()
    if level == "flowgraph":
        return Flowgraph.objects.filter(**base)
    if level == "conversation_graph":
        return ConversationGraph.objects.filter(**base)
    raise JobConfigError(f"unknown level {level!r}")


@transaction.atomic
def job_create(*, config: dict[str, Any], created_by=None, name: str = "", import_data: Any = None,
               existing: str | None = None, existing_ids: list[int] | None = None,
               enqueue: bool = True) -> GenerationJob:
    """Create a queued job (validating settings and imports) and start it after commit.

    A job starts by generating intents, from `import_data` (an import document, written as this
    job's rows), or from rows already in the database: `existing` names the level and
    `existing_ids` the rows (default: every imported row of that level that belongs to no job).
    Raises JobConfigError with a message for the user, including when an LLM stage would run
    without an endpoint.
    """
    config = dict(config)
    records: list[dict[str, Any]] = []
    if import_data is not None:
        start, records = import_parse(import_data)
        config["start"] = start
        config.setdefault("intents", 0)
    elif existing:
        if existing not in EXISTING_LEVELS:
            raise JobConfigError(f"cannot start from {existing!r}")
        ids = list(existing_ids) if existing_ids is not None else list(
            existing_imports(existing).order_by("pk").values_list("pk", flat=True))
        if not ids:
            raise JobConfigError(f"there are no imported {EXISTING_LEVELS[existing][1]} to start from")
        from generation.inputs import usable_inputs

        ids, skipped = usable_inputs(existing, ids)  # never build on what curation rejected
        if not ids:
            raise JobConfigError(f"all {skipped} {EXISTING_LEVELS[existing][1]} were rejected or excluded in "
                                 "curation; there is nothing to start from")
        config["start"] = EXISTING_LEVELS[existing][0]
        config["input_ids"] = {existing: ids}
        config.setdefault("intents", 0)
        if existing == "conversation_graph":
            # Noisy variants are made next to a new graph; stored graphs are sampled as they are
            # (the paths stage would otherwise look for this job's noisy graphs).
            config["noise"] = 0.0
    cfg = job_config_normalise(config)
    needing = llm_stages(cfg)
    if needing and not llm.endpoint_configured():
        raise JobConfigError(f"{llm.NO_ENDPOINT_MESSAGE} This job needs it for: {', '.join(needing)}.")
    if needing and cfg.get("batch"):
        from django.conf import settings

        from generation.llm.capabilities import batches_available

        if batches_available(endpoint_base_url()) is False:
            raise JobConfigError("batch mode: the endpoint has no Batch API (/batches); run the job online")
    if needing:  # what the form showed next to the cost limit, kept with the job
        from generation.services.estimate import job_estimate

        inputs = len(records) if records else len(cfg["input_ids"][existing]) if existing else None
        cfg["estimate"] = {k: v for k, v in job_estimate(cfg, inputs).items() if k != "stages"}
    job = GenerationJob.objects.create(name=name[:200], config=cfg, created_by=created_by)
    StageProgress.objects.bulk_create([StageProgress(job=job, stage=s) for s in STAGE_ORDER])
    if records:
        _import_rows(job, cfg["start"], records)
    elif existing:
        now = timezone.now()
        n = len(cfg["input_ids"][existing])
        StageProgress.objects.filter(job=job, stage__in=STAGE_ORDER[:STAGE_ORDER.index(cfg["start"])]).update(
            state=StageState.SKIPPED, started_at=now, finished_at=now)
        StageProgress.objects.filter(job=job, stage=existing).update(
            state=StageState.DONE, imported=n, generated=n, passed=n)
    if enqueue:
        from generation.tasks import job_advance_task

        transaction.on_commit(lambda: job_advance_task.delay(job.pk))
    return job


def _transition(job_id: int, to: str, error: str = "") -> bool:
    """Move a job to `to` if legal; False when another worker already moved it."""
    with transaction.atomic():
        job = GenerationJob.objects.select_for_update().get(pk=job_id)
        if job.status == to or not job.can_transition(to):
            return False
        job.transition(to, error=error)
        if job.is_terminal:
            job.counters = job_counters(job)
            webhooks.emit("job.finished", job_id=job.pk, name=job.name, status=job.status, error=job.error)
        job.save()
        return True


def job_fail(*, job_id: int, error: str) -> bool:
    return _transition(job_id, JobStatus.FAILED, error=error)


def job_cancel(*, job: GenerationJob) -> GenerationJob:
    """Stop new work: a queued job is cancelled at once, a running one drains to cancelled."""
    if job.status == JobStatus.QUEUED:
        _transition(job.pk, JobStatus.CANCELLED)
    elif job.status == JobStatus.RUNNING:
        _transition(job.pk, JobStatus.CANCELLING)
        from generation.tasks import job_advance_task

        transaction.on_commit(lambda: job_advance_task.delay(job.pk))
    elif job.is_terminal:
        raise IllegalTransition(f"job {job.pk} is {job.status} and cannot be cancelled")
    job.refresh_from_db()
    return job


def _stage_try_complete(sp_id: int) -> bool:
    """Mark a running stage done when every item is done; True when the stage is done now."""
    with transaction.atomic():
        sp = StageProgress.objects.select_for_update().get(pk=sp_id)
        if sp.state == StageState.DONE:
            return True
        if sp.state == StageState.RUNNING and len(sp.items) >= sp.total:
            sp.state = StageState.DONE
            sp.finished_at = timezone.now()
            sp.save(update_fields=["state", "finished_at"])
            return True
        return False


def job_advance(*, job_id: int, publish: Publisher) -> None:
    """Move the job forward as far as it can go now; safe to call any number of times."""
    while True:
        job = GenerationJob.objects.get(pk=job_id)
        if job.is_terminal:
            return
        if job.status == JobStatus.CANCELLING:
            _transition(job_id, JobStatus.CANCELLED)
            return
        if job.status == JobStatus.QUEUED:
            _transition(job_id, JobStatus.RUNNING)
            continue
        stages = sorted(StageProgress.objects.filter(job_id=job_id).order_by(),
                        key=lambda p: STAGE_ORDER.index(p.stage))
        dead = next((p for p in stages if stage_dead(p)), None)
        if dead is not None:
            # Nothing downstream can run on zero survivors: say so instead of "succeeded, 0 tests".
            job_fail(job_id=job_id, error=stage_failure_message(dead))
            return
        pending = [p for p in stages if p.state not in (StageState.DONE, StageState.SKIPPED)]
        if not pending:
            raised = items_raised_message(job_id)
            if raised:
                job_fail(job_id=job_id, error=raised)
            else:
                _transition(job_id, JobStatus.SUCCEEDED)
            return
        current = pending[0]
        if current.state == StageState.RUNNING:
            if _stage_try_complete(current.pk):
                continue
            return
        if current.state == StageState.PLANNING:
            stale = current.started_at and timezone.now() - current.started_at > PLANNING_STALE
            if not stale:
                return  # another advance is publishing this stage right now
            keys = [k for k in plan(job, current.stage) if k not in current.items]
            _publish_all(publish, current.stage, keys)
            StageProgress.objects.filter(pk=current.pk, state=StageState.PLANNING).update(state=StageState.RUNNING)
            continue
        # Waiting: plan it, or skip it when it has nothing to do.
        keys = plan(job, current.stage)
        if not keys:
            StageProgress.objects.filter(pk=current.pk, state=StageState.WAITING).update(
                state=StageState.SKIPPED, started_at=timezone.now(), finished_at=timezone.now())
            continue
        if needs_llm(current.stage, job.config) and not llm.endpoint_configured():
            job_fail(job_id=job_id, error=f"{current.stage}: {llm.NO_ENDPOINT_MESSAGE}")
            return
        claimed = StageProgress.objects.filter(pk=current.pk, state=StageState.WAITING).update(
            state=StageState.PLANNING, total=len(keys), started_at=timezone.now())
        if not claimed:
            continue  # someone else claimed it; re-read
        _publish_all(publish, current.stage, keys)
        StageProgress.objects.filter(pk=current.pk, state=StageState.PLANNING).update(state=StageState.RUNNING)


def _publish_all(publish: Publisher, stage: str, keys: list[str]) -> None:
    """Hand every key to `publish`, then let a batching publisher send what it holds."""
    for key in keys:
        publish(stage, key)
    flush = getattr(publish, "flush", None)
    if flush is not None:
        flush()


def job_run_inline(*, job: GenerationJob) -> GenerationJob:
    """Run a job to the end in this process (demo data, tests, `generate --inline`)."""

    def publish(stage: str, key: str) -> None:
        item_run(job_id=job.pk, stage=stage, key=key)

    job_advance(job_id=job.pk, publish=publish)
    job.refresh_from_db()
    return job


class _Recovered:
    """What this process's recovery already re-sent, so a periodic run does not flood the broker.

    A dead worker's claims stay on the items it finished, so "a worker that claimed an item of the
    stage is gone" stays true for the rest of the stage: its unclaimed items are re-sent once per
    dead worker, not on every run. Re-sending because of no progress happens at most once per
    PLANNING_STALE for each stage.
    """

    def __init__(self) -> None:
        self.dead: set[tuple[int, str, str]] = set()  # (job, stage, owner) whose loss was handled
        self.stale: dict[tuple[int, str], Any] = {}  # (job, stage) → when unclaimed items were last re-sent


RECOVERED = _Recovered()


def _items_to_resend(job: GenerationJob, sp: StageProgress, *, only_lost: bool, now) -> list[str]:
    """The unfinished items of an open stage whose message may be gone.

    An item claimed by a live delivery is being processed: never re-sent. One claimed by a dead
    worker is re-sent. An unclaimed one is either still queued on the broker or was reserved by a
    worker that died before starting it; with `only_lost` (recovery, run periodically in every
    worker) it is re-sent only when this stage shows that loss is possible — a worker that claimed
    any of its items is gone (once per such worker), or no progress for PLANNING_STALE (at most
    once per PLANNING_STALE) — so a worker joining a healthy job publishes nothing. Re-sending is
    harmless anyway: a second delivery of an item is a no-op (services/claims.py).
    """
    pending = [k for k in plan(job, sp.stage) if k not in sp.items]
    claims = claims_by_key(job.pk, sp.stage)
    lost = [k for k in pending if k in claims and claim_lost(claims[k], (job.pk, sp.stage, k), now)]
    unclaimed = [k for k in pending if k not in claims]
    if not only_lost:
        return lost + unclaimed
    # A worker on this host that claimed any item of the stage and no longer exists may have taken
    # reserved (never claimed) messages with it.
    dead = {(job.pk, sp.stage, owner) for owner in {row["owner"] for row in claims.values()} if owner_dead(owner)}
    dead |= {(job.pk, sp.stage, claims[k]["owner"]) for k in lost}
    newly_dead = dead - RECOVERED.dead
    RECOVERED.dead |= dead
    if unclaimed and not newly_dead:
        from generation.services.health import last_progress

        last = RECOVERED.stale.get((job.pk, sp.stage))
        if now - last_progress(job) <= PLANNING_STALE or (last is not None and now - last <= PLANNING_STALE):
            unclaimed = []
        else:
            RECOVERED.stale[(job.pk, sp.stage)] = now
    return lost + unclaimed


def job_resume(*, job: GenerationJob, only_lost: bool = False) -> int:
    """Re-publish the unfinished items of the job's open stage; returns how many were sent.

    Used after a crash: a stage left in planning or running whose messages were lost. Items being
    processed by a live worker are not re-sent; see `_items_to_resend` for `only_lost`.
    """
    from generation.tasks import item_run_task, job_advance_task

    sent = 0
    now = timezone.now()
    for sp in StageProgress.objects.filter(job=job, state__in=[StageState.RUNNING, StageState.PLANNING]):
        lossy = only_lost
        if sp.state == StageState.PLANNING and only_lost:
            if sp.started_at and now - sp.started_at <= PLANNING_STALE:
                continue  # a live `job_advance` is publishing it right now
            lossy = False  # its publisher died part-way: what it did not send is nowhere
        for key in _items_to_resend(job, sp, only_lost=lossy, now=now):
            item_run_task.delay(job.pk, sp.stage, key)
            sent += 1
        StageProgress.objects.filter(pk=sp.pk, state=StageState.PLANNING).update(state=StageState.RUNNING)
    job_advance_task.delay(job.pk)
    return sent


def jobs_recover() -> int:
    """Resume every job that is not finished (see tasks.jobs_recover_task).

    First the in-flight LLM rows of dead workers are marked lost_in_flight (their prompts are
    charged to the job); the items they belonged to are not marked done, so they are re-sent.
    Only items whose message may have been lost are re-sent (`job_resume(only_lost=True)`).
    """
    llm.calls_mark_lost()
    sent = 0
    for job in GenerationJob.objects.filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.CANCELLING]):
        sent += job_resume(job=job, only_lost=True)
    return sent


# --------------------------------------------------------------------------- demo


def demo_build(*, flowgraphs: list[Flowgraph], paths: int = 3, noise: float = 0.0, seed: int = 0,
               sampler: str = "algorithm1", name: str = "Demo build", created_by=None) -> GenerationJob:
    """Derive conversation graph → (noise) → paths → conversations → tests from existing flowgraphs.

    Deterministic and offline (no LLM), run in this process; the rows belong to a new succeeded
    job so they show on the dashboard with their funnel.
    """
    job = job_create(
        config={"paths": paths, "noise": noise, "seed": seed, "sampler": sampler,
                "conversation_graph": "deterministic", "conversations": "offline"},
        existing="flowgraph", existing_ids=[f.pk for f in flowgraphs], name=name, created_by=created_by,
        enqueue=False,
    )
    return job_run_inline(job=job)


"""One work item: process it outside any transaction, then write its rows and mark it done in one.

`item_run` is what a worker's task does (in batch mode an item whose request waits for its batch
is let go unfinished and run again when the batch is back); `item_fail` records an item whose task raised, so no
exception leaves a stage (and its job) waiting forever.
"""
from __future__ import annotations

from contextlib import nullcontext

from django.db import IntegrityError, OperationalError, connection, transaction
from django.utils import timezone

from generation.drawings import graphs_stored
from generation.models import (
    ConversationGraph, Discard, Flowgraph, GenerationJob, JobStatus, Origin, StageProgress, StageState, Test,
)
from generation.redact import redact
from generation.services.claims import item_claim, item_unclaim, new_delivery
from generation.llm import LLMDeferred
from generation.llm.batches import batches_poll_soon
from generation.stages import ItemResult, process


def _duplicate_test(job: GenerationJob, key: str, fields: dict) -> bool:
    fingerprint = fields.get("fingerprint")
    return bool(fingerprint) and Test.objects.filter(job=job, fingerprint=fingerprint).exclude(key=key).exists()


def _savepoint():
    """A savepoint only inside a transaction (where a failed INSERT would poison it on Postgres);
    in autocommit a failed INSERT leaves nothing behind, and BEGIN/COMMIT around one would be waste."""
    return transaction.atomic() if connection.in_atomic_block else nullcontext()


def _write(job: GenerationJob, stage: str, result: ItemResult) -> None:
    """Write an item's rows keyed on (job, key); a test equal to one the job has is not stored.
    New graphs are drawn by the worker once the rows are committed (generation.drawings)."""
    graphs: dict[type, list[str]] = {}
    for out in result.outputs:
        if out.model in (Flowgraph, ConversationGraph):
            graphs.setdefault(out.model, []).append(out.key)
        fields = {"origin": Origin.GENERATED, "validation": [], **out.fields}
        if out.model is Test and _duplicate_test(job, out.key, fields):
            result.passed -= 1
            result.notes["duplicate_test"] = result.notes.get("duplicate_test", 0) + 1
            continue
        try:
            # Insert first: the row exists only when an earlier run of this item died before its
            # done mark (claims make that the one way), so a SELECT before every insert is waste.
            with _savepoint():
                out.model.objects.create(job=job, key=out.key, **fields)
        except IntegrityError:
            if out.model is Test and _duplicate_test(job, out.key, fields):
                result.passed -= 1
                result.notes["duplicate_test"] = result.notes.get("duplicate_test", 0) + 1
                continue
            # An earlier run of this item wrote the row: overwrite it.
            out.model.objects.filter(job=job, key=out.key).update(**fields)
    for model, keys in graphs.items():
        graphs_stored(model, list(model.objects.filter(job=job, key__in=keys).values_list("pk", flat=True)))
    for d in result.discards:
        fields = {"reason": d.reason, "detail": redact(d.detail), "example": redact(d.example)}
        try:
            with transaction.atomic():
                Discard.objects.update_or_create(job=job, stage=stage, key=d.key, defaults=fields)
        except IntegrityError:  # the same item written twice at once (a redelivery)
            Discard.objects.filter(job=job, stage=stage, key=d.key).update(**fields)


def _mark_done(job: GenerationJob, stage: str, key: str, result: ItemResult) -> bool | None:
    """Add the item's outcome and counts to its stage in one conditional UPDATE; None when already done.

    The rows were written before (keyed, idempotent), so no transaction holds the stage row while
    they are: the row is locked only for this one statement. That lock used to be held across every
    item's writes, and with 16 items finishing at once it was where an LLM stage lost its time.
    """
    table = StageProgress._meta.db_table
    counts = [result.generated, result.passed, result.discarded, result.failed, result.repaired, result.resampled]
    setters = ("done = done + 1, generated = generated + %s, passed = passed + %s, discarded = discarded + %s, "
               "failed = failed + %s, repaired = repaired + %s, resampled = resampled + %s")
    notes = sorted(result.notes.items())
    if connection.vendor == "postgresql":
        add_notes = "".join(" || jsonb_build_object(%s::text, COALESCE((notes->>%s)::int, 0) + %s)" for _ in notes)
        sql = (f"UPDATE {table} SET items = items || jsonb_build_object(%s::text, %s::text), "
               f"notes = notes{add_notes}, {setters} "
               f"WHERE job_id = %s AND stage = %s AND NOT (items ? %s) RETURNING id, done, total, state")
        params = [key, result.outcome, *[v for k, n in notes for v in (k, k, n)], *counts, job.pk, stage, key]
    else:  # SQLite: the JSON1 functions, with the key quoted as one path member
        path = '$."' + key.replace('"', "") + '"'
        add_notes = "".join(", %s, COALESCE(json_extract(notes, %s), 0) + %s" for _ in notes)
        note_params = [v for k, n in notes for v in ('$."' + k + '"', '$."' + k + '"', n)]
        sql = (f"UPDATE {table} SET items = json_set(items, %s, %s), notes = json_set(notes{add_notes}), {setters} "
               f"WHERE job_id = %s AND stage = %s AND json_type(items, %s) IS NULL RETURNING id, done, total, state")
        params = [path, result.outcome, *note_params, *counts, job.pk, stage, path]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    sp_id, done, total, state = row
    if state != StageState.RUNNING or done < total:
        return False
    return bool(StageProgress.objects.filter(pk=sp_id, state=StageState.RUNNING).update(
        state=StageState.DONE, finished_at=timezone.now()))


def _commit(job: GenerationJob, stage: str, key: str, result: ItemResult) -> bool | None:
    """Write the item's rows, then its outcome; None when it was already done.

    Rows are written first and the item marked done in one statement (its counts and funnel notes
    added in place), with no lock on the stage row around the writes: only the delivery holding the
    item's claim gets here, and tests that duplicate each other across items are told apart by
    the (job, fingerprint) unique constraint. That lock used to serialise the whole tests stage.
    """
    if result.outcome != "cancelled" and connection.vendor in ("postgresql", "sqlite"):
        _write(job, stage, result)
        return _mark_done(job, stage, key, result)
    with transaction.atomic():
        sp = StageProgress.objects.select_for_update().get(job_id=job.pk, stage=stage)
        if key in sp.items:
            return None
        _write(job, stage, result)
        sp.items[key] = result.outcome
        sp.done = len(sp.items)
        sp.generated += result.generated
        sp.passed += result.passed
        sp.discarded += result.discarded
        sp.failed += result.failed
        sp.repaired += result.repaired
        sp.resampled += result.resampled
        for reason, n in result.notes.items():
            sp.notes[reason] = sp.notes.get(reason, 0) + n
        completed = sp.state == StageState.RUNNING and len(sp.items) >= sp.total
        if completed:
            sp.state = StageState.DONE
            sp.finished_at = timezone.now()
        sp.save()
    return completed


def item_run(*, job_id: int, stage: str, key: str, delivery: str | None = None) -> bool:
    """Process one work item once; True when the caller should enqueue `job_advance`.

    `delivery` names this delivery of the item's task (the Celery task id). Only the delivery
    that claims the item processes it (see services/claims.py); any other is a no-op, so an item
    delivered twice makes its LLM calls once.
    """
    delivery = delivery or new_delivery()
    if not item_claim(job_id, stage, key, delivery):
        return False  # another live delivery has it; that one moves the job on
    release = False
    try:
        # The stage's done marks and the job in one query.
        sp = StageProgress.objects.select_related("job").only("id", "items", "state", "job").get(
            job_id=job_id, stage=stage)
        if key in sp.items:
            return sp.state == StageState.DONE  # a redelivery: make sure the job moves on
        job = sp.job
        if job.status != JobStatus.RUNNING:
            result = ItemResult(outcome="cancelled")
        else:
            try:
                result = process(job, key)
            except LLMDeferred:
                # Batch mode: a request of this item waits for its batch. Let go of the item (the
                # claim row too) so the poll's re-publishing, in any process, can claim it again.
                release = True
                batches_poll_soon()
                return False
            if result.outcome not in ("failed", "cancelled"):
                result.outcome = "passed" if result.passed else "discarded"
        done = bool(_commit(job, stage, key, result))
        if result.stopped:
            from generation.services.jobs import job_fail  # noqa: PLC0415 - jobs imports this module

            job_fail(job_id=job_id, error=result.stopped)  # the cost limit: stop cleanly, keep what was made
        return done
    except OperationalError:
        release = True  # the task is retried, maybe by another process: let that delivery claim it
        raise
    finally:
        item_unclaim(job_id, stage, key, release=release)


def item_fail(*, job_id: int, stage: str, key: str, error: str) -> bool:
    """Record an item whose task raised as failed (reason task_error); True when the stage is done now."""
    job = GenerationJob.objects.get(pk=job_id)
    result = ItemResult(outcome="failed", generated=1, failed=1).discard(key, "task_error", redact(error))
    return bool(_commit(job, stage, key, result))

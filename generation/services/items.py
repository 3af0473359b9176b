"""One work item: process it outside any transaction, then write its rows and mark it done in one.

`item_run` is what a worker's task does; `item_fail` records an item whose task raised, so no
exception leaves a stage (and its job) waiting forever.
"""
from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from generation.models import Discard, GenerationJob, JobStatus, Origin, StageProgress, StageState, Test
from generation.redact import redact
from generation.stages import ItemResult, process


def _duplicate_test(job: GenerationJob, key: str, fields: dict) -> bool:
    fingerprint = fields.get("fingerprint")
    return bool(fingerprint) and Test.objects.filter(job=job, fingerprint=fingerprint).exclude(key=key).exists()


def _write(job: GenerationJob, stage: str, result: ItemResult) -> None:
    """Write an item's rows keyed on (job, key); a test equal to one the job has is not stored."""
    for out in result.outputs:
        fields = {"origin": Origin.GENERATED, "validation": [], **out.fields}
        if out.model is Test and _duplicate_test(job, out.key, fields):
            result.passed -= 1
            result.notes["duplicate_test"] = result.notes.get("duplicate_test", 0) + 1
            continue
        try:
            with transaction.atomic():
                out.model.objects.update_or_create(job=job, key=out.key, defaults=fields)
        except IntegrityError:
            if out.model is Test and _duplicate_test(job, out.key, fields):
                result.passed -= 1
                result.notes["duplicate_test"] = result.notes.get("duplicate_test", 0) + 1
                continue
            # Another run of this item created the row between our read and our insert.
            out.model.objects.filter(job=job, key=out.key).update(**fields)
    for d in result.discards:
        Discard.objects.update_or_create(job=job, stage=stage, key=d.key, defaults={
            "reason": d.reason, "detail": redact(d.detail), "example": redact(d.example)})


def _commit(job: GenerationJob, stage: str, key: str, result: ItemResult) -> bool | None:
    """Write the item and its outcome under the stage lock; None when it was already done."""
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
        for reason, n in result.notes.items():
            sp.notes[reason] = sp.notes.get(reason, 0) + n
        completed = sp.state == StageState.RUNNING and len(sp.items) >= sp.total
        if completed:
            sp.state = StageState.DONE
            sp.finished_at = timezone.now()
        sp.save()
    return completed


def item_run(*, job_id: int, stage: str, key: str) -> bool:
    """Process one work item once; True when the caller should enqueue `job_advance`."""
    sp = StageProgress.objects.only("id", "items", "state").get(job_id=job_id, stage=stage)
    if key in sp.items:
        return sp.state == StageState.DONE  # a redelivery: make sure the job moves on
    job = GenerationJob.objects.get(pk=job_id)
    if job.status != JobStatus.RUNNING:
        result = ItemResult(outcome="cancelled")
    else:
        result = process(job, key)
        if result.outcome != "failed":
            result.outcome = "passed" if result.passed else "discarded"
    return bool(_commit(job, stage, key, result))


def item_fail(*, job_id: int, stage: str, key: str, error: str) -> bool:
    """Record an item whose task raised as failed (reason task_error); True when the stage is done now."""
    job = GenerationJob.objects.get(pk=job_id)
    result = ItemResult(outcome="failed", generated=1, failed=1).discard(key, "task_error", redact(error))
    return bool(_commit(job, stage, key, result))

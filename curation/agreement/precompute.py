"""Analytics precomputed by the worker (issue #31: pages ≤ 200 ms p95 at 50,000 items).

The whole analytics table (every stage and slice, with the curation economics) is computed by the
Celery task ``curation.analytics_recompute`` and kept in the shared cache under one key, with the
change mark it was computed at. The page and analytics.csv only read it: one cache read and one
query for the current mark, whatever the number of items.

The change mark is the largest id of every table the figures read (audit events, reviews, review
items, resolutions, LLM calls), taken in one query from their primary-key indexes: every curation
change writes an audit event or one of those rows, so the stored figures are current exactly when
their mark equals today's. (Ids are never reused outside a rolled-back test transaction; the
tests clear the stored table between tests.)

Scheduling: a committed audit event asks for a recompute in DEBOUNCE_SECONDS (or the last
recompute's duration, whichever is longer, so a busy afternoon costs the worker at most half its
time), and at most one recompute is pending: the pending key is added atomically and dropped by the
task as it starts, so a change made while it computes schedules the next one. A page that finds the
figures stale or missing asks too, unless a recompute is running (a change the signal did not see:
a bulk insert, a lost message).
With CELERY_TASK_ALWAYS_EAGER (debugging) there is no worker to wait for: changes schedule nothing
and the page computes the figures when it finds them stale, as it did before.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timezone as dt_timezone
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.utils import timezone

log = logging.getLogger(__name__)

STORE_KEY = "curation:analytics:table"
PENDING_KEY = "curation:analytics:pending"
LAST_SECONDS_KEY = "curation:analytics:seconds"
RUNNING_KEY = "curation:analytics:running"
RUNNING_TTL = 900  # a worker killed mid-recompute blocks nothing longer than this
DEBOUNCE_SECONDS = 5
# A pending mark outlives a lost message by this much; then the next change or page view asks again.
PENDING_TTL = 300
# A recompute queued longer ago than this, and not started, is shown as waiting for a worker.
WAITING_SECONDS = 60


def _mark_models():
    from curation.models import AuditEvent, Resolution, Review, ReviewItem
    from generation.models import LLMCall

    return [AuditEvent, Review, ReviewItem, Resolution, LLMCall]


def change_mark() -> tuple[int, ...]:
    """The largest id of every table the figures read: one query, each part an index lookup."""
    q = connection.ops.quote_name
    parts = ", ".join(f"(SELECT MAX({q(m._meta.pk.column)}) FROM {q(m._meta.db_table)})" for m in _mark_models())
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {parts}")
        return tuple(int(v or 0) for v in cursor.fetchone())


def compute() -> dict[str, Any]:
    """The figures the page and the CSV show, computed now (seconds at 50,000 items)."""
    from curation.agreement.analytics import analytics
    from curation.agreement.economics import economics
    from curation.models import ReviewItem
    from generation.models import CurationStatus, GenerationJob, Test

    return {
        "tables": analytics(),
        "economics": economics(job_ids=GenerationJob.objects.values_list("pk", flat=True),
                               accepted_tests=Test.objects.filter(status=CurationStatus.ACCEPTED).count(),
                               item_ids=ReviewItem.objects.values_list("pk", flat=True)),
    }


def recompute() -> dict[str, Any]:
    """Compute the whole table and store it with the mark read before computing (a change made
    meanwhile leaves it stale, so it is computed again). Returns what was stored."""
    cache.delete(PENDING_KEY)  # from now on a change asks for the next recompute
    cache.set(RUNNING_KEY, time.time(), RUNNING_TTL)
    try:
        mark = change_mark()
        start, started_at = time.perf_counter(), timezone.now()
        bundle = {"mark": mark, "started_at": started_at, **compute()}
        bundle["computed_at"] = timezone.now()
    finally:
        cache.delete(RUNNING_KEY)
    bundle["seconds"] = time.perf_counter() - start
    stored = cache.get(STORE_KEY)
    # Two recomputes may overlap (a worker has several threads): the one started earlier never
    # overwrites a later one. (Marks are not compared: a database restored or recreated under a
    # cache that kept its figures starts its ids lower again.)
    if stored is None or stored.get("started_at", stored["computed_at"]) <= bundle["started_at"]:
        cache.set(STORE_KEY, bundle, None)
    cache.set(LAST_SECONDS_KEY, bundle["seconds"], None)
    return bundle


def inline() -> bool:
    """No worker to wait for (CELERY_TASK_ALWAYS_EAGER, for debugging): the page computes."""
    return bool(settings.CELERY_TASK_ALWAYS_EAGER)


def _enqueue(countdown: float) -> None:
    if inline():
        recompute()
        return
    from curation.tasks import analytics_recompute_task

    analytics_recompute_task.apply_async(countdown=countdown)


def request_recompute(countdown: float | None = None) -> bool:
    """Queue one recompute unless one is pending; True when this call queued it. ``countdown``
    None: the debounce (DEBOUNCE_SECONDS, or the last recompute's duration if longer)."""
    if not cache.add(PENDING_KEY, time.time(), PENDING_TTL):
        return False
    if countdown is None:
        countdown = max(DEBOUNCE_SECONDS, float(cache.get(LAST_SECONDS_KEY) or 0))
    try:
        _enqueue(countdown)
    except Exception as exc:  # noqa: BLE001 - a broker outage: the next change or page view asks again
        cache.delete(PENDING_KEY)
        log.warning("analytics recompute not queued: %s", type(exc).__name__)
        return False
    return True


def audit_event_saved(sender, created: bool = False, raw: bool = False, **_: object) -> None:
    """post_save of AuditEvent: once the change commits, ask for a debounced recompute."""
    if raw or not created or inline():
        return
    transaction.on_commit(request_recompute)


@dataclass
class Status:
    bundle: dict[str, Any] | None
    stale: bool
    queued_at: datetime | None  # when the pending recompute was queued, if one is

    @property
    def computed_at(self) -> datetime | None:
        return self.bundle["computed_at"] if self.bundle else None

    @property
    def waiting_for_worker(self) -> bool:
        return self.queued_at is not None and (timezone.now() - self.queued_at).total_seconds() > WAITING_SECONDS


def status(ask: bool = True) -> Status:
    """The stored figures and whether they are current: one cache read and one query. Stale or
    missing figures are asked for (``ask``), at once when nothing is stored yet."""
    bundle = cache.get(STORE_KEY)
    stale = bundle is None or tuple(bundle["mark"]) != change_mark()
    if stale and ask:
        if inline():  # no worker to wait for, whatever is marked pending
            bundle, stale = recompute(), False
        elif cache.get(RUNNING_KEY) is None:  # a page polling during a recompute asks for no second one
            request_recompute(countdown=0)
    queued = cache.get(PENDING_KEY) if stale else None
    queued_at = datetime.fromtimestamp(queued, tz=dt_timezone.utc) if isinstance(queued, (int, float)) else None
    return Status(bundle=bundle, stale=stale, queued_at=queued_at)


def forget() -> None:
    """Drop the stored figures and any pending mark (tests: ids are reused after a rollback)."""
    cache.delete_many([STORE_KEY, PENDING_KEY, LAST_SECONDS_KEY, RUNNING_KEY])

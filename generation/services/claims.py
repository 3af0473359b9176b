"""Exactly-once item processing across worker processes.

An item's task may be delivered more than once: a broker redelivers it (acks_late after a dead
worker, Redis' visibility timeout), `job_resume` or the start-up recovery re-publishes it, a
second worker process receives a copy. Each delivery first *claims* the item: it inserts the
item's ItemClaim row (unique on job, stage, key; an INSERT only one process wins, on SQLite and on
Postgres alike) or, when the row exists, takes it over with a compare-and-swap UPDATE — but only
when the delivery that holds it can no longer be processing it:

* it is this very delivery again (the same task id: a Celery retry, or a redelivered message
  whose earlier run ended), and no thread of this process is running it now;
* its owner is this process but no thread of it is running the item (the run ended without
  marking it done, e.g. a database error);
* its owner is a process on this host that no longer exists (SIGKILL), or, on another host,
  the claim is older than the longest an item can take (see `llm.accounting.orphaned`).

Every other delivery is a no-op: no LLM call, no write. The claim stays after the item is done
(the done mark on StageProgress is what later deliveries check first).
"""
from __future__ import annotations

import os
import threading
import uuid

from django.db import connection
from django.utils import timezone

from generation.llm.accounting import HOST, orphaned, process_alive, worker_id
from generation.models import ItemClaim

_active: set[tuple[int, str, str]] = set()  # items some thread of this process is processing now
_lock = threading.Lock()


def new_delivery() -> str:
    """A delivery id for runs that are not Celery tasks (inline jobs, tests)."""
    return uuid.uuid4().hex


def _running_here(item: tuple[int, str, str]) -> bool:
    with _lock:
        return item in _active


def claim_stale(row: dict, item: tuple[int, str, str], delivery: str, now=None) -> bool:
    """True when the delivery holding `row` cannot be processing the item any more."""
    if row["owner"] == worker_id():
        return not _running_here(item)
    if row["delivery"] == delivery:
        return True  # the same message again: its earlier run ended (a retry, a redelivery)
    return orphaned({"worker": row["owner"], "created_at": row["claimed_at"]}, now or timezone.now())


def _insert(job_id: int, stage: str, key: str, owner: str, delivery: str) -> bool:
    """INSERT the claim unless the row exists (one statement, no savepoint); True when inserted."""
    q = connection.ops.quote_name
    sql = (f"INSERT INTO {q(ItemClaim._meta.db_table)} ({q('job_id')}, {q('stage')}, {q('key')}, {q('owner')}, "
           f"{q('delivery')}, {q('claimed_at')}) VALUES (%s, %s, %s, %s, %s, %s) "
           f"ON CONFLICT ({q('job_id')}, {q('stage')}, {q('key')}) DO NOTHING RETURNING {q('id')}")
    now = ItemClaim._meta.get_field("claimed_at").get_db_prep_value(timezone.now(), connection)
    with connection.cursor() as cursor:
        cursor.execute(sql, [job_id, stage, key, owner, delivery, now])
        return cursor.fetchone() is not None


def item_claim(job_id: int, stage: str, key: str, delivery: str) -> bool:
    """Claim the item for this delivery; False when another live delivery holds it."""
    item = (job_id, stage, key)
    me = worker_id()
    with _lock:
        if item in _active:
            return False
        _active.add(item)  # reserved before the INSERT, so two threads here never both win
    won = False
    try:
        for _ in range(2):
            if _insert(job_id, stage, key, me, delivery):
                won = True
                return True
            row = ItemClaim.objects.filter(job_id=job_id, stage=stage, key=key).values(
                "id", "owner", "delivery", "claimed_at").first()
            if row is None:
                continue  # released in between: insert again
            # Our own row is stale: `_active` (checked above) says no thread of ours is running it.
            if row["owner"] != me and not claim_stale(row, item, delivery):
                return False
            won = bool(ItemClaim.objects.filter(pk=row["id"], owner=row["owner"], delivery=row["delivery"]).update(
                owner=me, delivery=delivery, claimed_at=timezone.now()))
            return won
        return False
    finally:
        if not won:
            with _lock:
                _active.discard(item)


def item_unclaim(job_id: int, stage: str, key: str, *, release: bool = False) -> None:
    """This thread stopped processing the item; `release` also deletes the row (before a retry)."""
    try:
        if release:
            ItemClaim.objects.filter(job_id=job_id, stage=stage, key=key, owner=worker_id()).delete()
    finally:
        with _lock:
            _active.discard((job_id, stage, key))


def claims_by_key(job_id: int, stage: str) -> dict[str, dict]:
    """The claim rows of a stage's items, by key."""
    rows = ItemClaim.objects.filter(job_id=job_id, stage=stage).values("key", "owner", "delivery", "claimed_at")
    return {r["key"]: r for r in rows}


def owner_dead(owner: str) -> bool:
    """True for a worker process on this host that no longer exists (False when we cannot tell)."""
    host, _, pid = owner.rpartition(":")
    return host == HOST and pid.isdigit() and int(pid) != os.getpid() and not process_alive(int(pid))


def claim_lost(row: dict, item: tuple[int, str, str], now=None) -> bool:
    """A claim whose owner is gone or stopped (for recovery: the item's message may be lost with it)."""
    if row["owner"] == worker_id():
        return not _running_here(item)
    return orphaned({"worker": row["owner"], "created_at": row["claimed_at"]}, now or timezone.now())

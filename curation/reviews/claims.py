"""Claiming review items: "next item" for an annotator, and the helpers every workflow step shares.

Split out of curation.reviews.services (which re-exports everything here). The concurrency contract is
the one services states: every change to an item's claims happens inside one transaction that
holds the item's row lock (Postgres: SELECT … FOR UPDATE; SQLite: the IMMEDIATE transaction takes
the database write lock when the block starts).
"""
from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from curation.models import Assignment, AuditEvent, Claim, ItemState, Review, ReviewItem, ReviewStage
from curation.models.assignments import holding_q
from curation.reviews import queue
from curation.reviews.state import Effective, effective_q


class CurationError(Exception):
    """A workflow step that is not allowed now; the message is shown to the user."""


def _claim_expiry(now):
    return now + timedelta(minutes=settings.CLAIM_MINUTES)


def _audit(actor, action: str, item: ReviewItem | None, before: dict | None = None, after: dict | None = None) -> None:
    AuditEvent.objects.create(actor_id=getattr(actor, "pk", None), action=action, item_id=getattr(item, "pk", None),
                              before=before or {}, after=after or {}, at=timezone.now())


def _item_snapshot(item: ReviewItem) -> dict[str, Any]:
    return {"state": item.state, "decision": item.decision, "review_count": item.review_count}


def _review_snapshot(review: Review) -> dict[str, Any]:
    return {"review_id": review.pk, "verdict": review.verdict, "reason_codes": list(review.reason_codes),
            "comment": review.comment}



# --------------------------------------------------------------------------- queue


def queue_candidates(*, stage: str, annotator, now=None) -> list[ReviewItem]:
    """Open items of `stage` this annotator may take, best first (the rule is in curation.reviews.queue)."""
    return list(queue.candidates(stage=stage, annotator_id=annotator.pk, now=now or timezone.now()))


ASSIGNED_SHOWN = 20


def assigned_items(*, annotator, limit: int = ASSIGNED_SHOWN) -> list[ReviewItem]:
    """The open items assigned to the annotator and not yet reviewed or skipped by them (the queue
    page's "Assigned to you"), in the order claim-next takes them per stage; at most limit + 1
    (the page says "and more")."""
    holding = Assignment.objects.filter(holding_q(), annotator=annotator).values("item_id")
    qs = ReviewItem.objects.filter(effective_q(Effective.OPEN), pk__in=holding)
    return list(qs.order_by("stage", "-has_warnings", "-review_count", "id")[: limit + 1])


def held_claim(*, annotator, stage: str | None = None, now=None) -> Claim | None:
    now = now or timezone.now()
    qs = Claim.objects.filter(effective_q(Effective.OPEN, prefix="item__"), annotator=annotator, expires_at__gt=now)
    if stage:
        qs = qs.filter(item__stage=stage)
    return qs.select_related("item").order_by("claimed_at", "id").first()


def held_claims(*, annotator, now=None) -> list[Claim]:
    """The annotator's active claims on items that are still open (the "Items you hold" list)."""
    now = now or timezone.now()
    return list(Claim.objects.filter(effective_q(Effective.OPEN, prefix="item__"), annotator=annotator,
                                     expires_at__gt=now).select_related("item").order_by("claimed_at", "id"))


def review_claim_next(*, annotator, stage: str) -> ReviewItem | None:
    """Claim the next item of `stage` for `annotator` (or return the one they already hold)."""
    if stage not in ReviewStage.values:
        raise CurationError(f"Unknown stage {stage!r}.")
    now = timezone.now()
    # An item the annotator holds is theirs to resume: read it outside any transaction, so the
    # resumption takes no lock (on SQLite an atomic block takes the database's write lock).
    held = queue.held_item(stage=stage, annotator_id=annotator.pk, now=now)
    if held is not None:
        return held
    if connection.features.has_select_for_update:
        return _claim_next(annotator, stage, now)
    return _claim_next_sqlite(annotator, stage, now)


def _claim_next_sqlite(annotator, stage: str, now) -> ReviewItem | None:
    """SQLite: search outside the write lock (WAL readers run beside the writer), then hold it only
    to check the item against the same rule again, by its id, and claim it."""
    tried: list[int] = []
    for _attempt in range(50):
        pick = {"stage": stage, "annotator_id": annotator.pk, "now": now, "exclude_ids": tried}
        item = queue.first_candidate(assigned_only=True, **pick)  # the annotator's assigned items first (#30)
        if item is None:
            share = queue.gold_share(stage=stage)
            if share and _rng.random() < share:  # gold checks mixed in at their share of the open queue (#16)
                item = queue.first_candidate(gold_only=True, **pick)
            item = item or queue.first_candidate(**pick)
        if item is None:
            return None
        with transaction.atomic():  # the write lock (BEGIN IMMEDIATE): no claim can happen meanwhile
            held = queue.held_item(stage=stage, annotator_id=annotator.pk, now=now)
            if held is not None:
                return held  # this annotator's own claim made in between (a double click)
            fresh = queue.first_candidate(stage=stage, annotator_id=annotator.pk, now=now, only_id=item.pk)
            if fresh is None:  # taken, reviewed or excluded since the search
                tried.append(item.pk)
                continue
            _claim_upsert(fresh, annotator, now)
            _audit(annotator, AuditEvent.Action.CLAIM, fresh, _item_snapshot(fresh),
                   {"expires_at": _claim_expiry(now).isoformat()})
            return fresh
    return None


@transaction.atomic
def _claim_next(annotator, stage: str, now) -> ReviewItem | None:
    tried: list[int] = []
    for _attempt in range(50):
        try:
            # No savepoint per attempt: an item found full was only read (and locked, until this
            # transaction ends a few milliseconds later: it is full for every claimer anyway).
            return _claim_one(annotator, stage, now, tried)
        except _ItemFull as full:
            tried.append(full.item_id)
    return None


# Draws whether a claim takes a gold item first; a module attribute so that a test can seed it.
_rng = random.Random()


class _ItemFull(Exception):
    def __init__(self, item_id: int) -> None:
        self.item_id = item_id


def _claim_one(annotator, stage: str, now, tried: list[int]) -> ReviewItem | None:
    pick = {"stage": stage, "annotator_id": annotator.pk, "now": now, "exclude_ids": tried}
    # Skip rows other claimers hold right now; only when none is free, wait for a locked one,
    # so "nothing returned" really means nothing is left for this annotator.
    # The annotator's assigned items first (#30): reserved for them, so waiting for a row lock
    # here is waiting for a co-assignee's claim or an adjudicator's bulk action, a few milliseconds.
    item = queue.first_candidate(lock="wait", assigned_only=True, **pick)
    if item is not None:
        item.refresh_from_db()
    else:
        share = queue.gold_share(stage=stage)
        if share and _rng.random() < share:  # gold checks mixed in at their share of the open queue (#16)
            item = queue.first_candidate(lock="skip_locked", gold_only=True, **pick)
    if item is None:
        item = queue.first_candidate(lock="skip_locked", **pick)
    if item is None:
        item = queue.first_candidate(lock="wait", **pick)
        if item is None:
            return None
        # We waited for another claimer: read the row as they left it.
        item.refresh_from_db()
    # The row lock is ours. The candidate query's claim count came from the snapshot taken when
    # it started; count again now (claims and assignments), so one committed in between is seen.
    if item.state != ItemState.OPEN or item.excluded or (
        item.review_count + queue.active_claims_of_others(item_id=item.pk, annotator_id=annotator.pk, now=now)
        >= item.required_reviews
    ):
        raise _ItemFull(item.pk)
    _claim_upsert(item, annotator, now)
    _audit(annotator, AuditEvent.Action.CLAIM, item, _item_snapshot(item),
           {"expires_at": _claim_expiry(now).isoformat()})
    return item


def _claim_upsert(item: ReviewItem, annotator, now) -> None:
    """Insert the claim, or renew the annotator's own lapsed claim on the item (one statement)."""
    Claim.objects.bulk_create(
        [Claim(item_id=item.pk, annotator_id=annotator.pk, claimed_at=now, expires_at=_claim_expiry(now))],
        update_conflicts=True, unique_fields=["item", "annotator"], update_fields=["claimed_at", "expires_at"])


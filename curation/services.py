"""Curation workflows: claim, review, skip, undo, resolve; blind visibility; public read helpers.

Concurrency contract of the queue: every change to an item's claims, reviews or state happens
inside one transaction that holds the item's row lock (Postgres: SELECT … FOR UPDATE; SQLite:
the IMMEDIATE transaction mode takes the database write lock when the block starts). So
"submitted reviews + active claims ≤ required reviews" holds at every commit.

Other apps use this module only: ``items_sync``, ``agreement_for_stage``, ``stage_funnel``,
``reviews_visible_to``, ``curated_tests``.
"""
from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

import webhooks
from almita_web.roles import ADJUDICATOR, ADMIN, RESEARCHER, user_roles
from curation import hot_sql, queue
from curation.guidelines import OTHER, SKIP_REASONS, reason_code_set
from curation.lineage import (  # noqa: F401  (re-exported for other apps)
    STAGE_MODELS,
    STRICT,
    artifact_for,
    cascade_apply,
    descendant_statuses,
    items_sync,
    items_sync_throttled,
    policy_for,
)
from curation.models import AuditEvent, Claim, ItemState, Resolution, Review, ReviewItem, ReviewStage, Skip, Verdict
from curation.state import Effective, effective_q, exclusion_reason
from curation.stats import (  # noqa: F401  (re-exported for other apps)
    agreement_for_stage,
    annotator_available,
    annotator_progress,
    stage_funnel,
    verdict_rows,
)
from generation.models import CurationStatus, Test


class CurationError(Exception):
    """A workflow step that is not allowed now; the message is shown to the user."""


def _claim_expiry(now):
    return now + timedelta(minutes=settings.CLAIM_MINUTES)


def _audit(actor, action: str, item: ReviewItem | None, before: dict | None = None, after: dict | None = None) -> None:
    hot_sql.insert(AuditEvent, actor=getattr(actor, "pk", None), action=action, item=getattr(item, "pk", None),
                   before=before or {}, after=after or {}, at=timezone.now())


def _item_snapshot(item: ReviewItem) -> dict[str, Any]:
    return {"state": item.state, "decision": item.decision, "review_count": item.review_count}


def _review_snapshot(review: Review) -> dict[str, Any]:
    return {"review_id": review.pk, "verdict": review.verdict, "reason_codes": list(review.reason_codes),
            "comment": review.comment}


def _lock_item(item_id: int) -> ReviewItem:
    item = queue.item_by_id(item_id, lock=True)
    if item is None:
        raise CurationError("No such review item.")
    return item


def _active_claims_of_others(item: ReviewItem, annotator, now) -> int:
    return queue.active_claims_of_others(item_id=item.pk, annotator_id=annotator.pk, now=now)


# --------------------------------------------------------------------------- queue


def queue_candidates(*, stage: str, annotator, now=None) -> list[ReviewItem]:
    """Open items of `stage` this annotator may take, best first (the rule is in curation.queue)."""
    return list(queue.candidates(stage=stage, annotator_id=annotator.pk, now=now or timezone.now()))


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
        item = None
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
    item = None
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
    # it started; count again now, so a claim committed in between is seen.
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
    hot_sql.upsert_claim(Claim, item_id=item.pk, annotator_id=annotator.pk, claimed_at=now, expires_at=_claim_expiry(now))


def _conclude(item: ReviewItem, actor) -> None:
    """All required reviews are in: decide, or send to adjudication (item lock held)."""
    verdicts = queue.verdicts_of(item_id=item.pk)
    if len(verdicts) == 1:
        _decide(item, verdicts.pop(), actor)
    elif policy_for(item.stage) == STRICT:
        _decide(item, Verdict.REJECT, actor)
    else:
        item.state = ItemState.DISAGREEMENT
        hot_sql.update(ReviewItem, item.pk, state=item.state, review_count=item.review_count)


def _decide(item: ReviewItem, decision: str, actor) -> None:
    item.state = ItemState.DECIDED
    item.decision = decision
    item.decided_at = timezone.now()
    hot_sql.update(ReviewItem, item.pk, state=item.state, decision=decision, decided_at=item.decided_at,
                   review_count=item.review_count)
    changes = cascade_apply(item, actor)
    _audit(actor, AuditEvent.Action.CASCADE, item, {}, {"decision": decision, "changed": changes})


@transaction.atomic
def review_submit(*, annotator, item_id: int, verdict: str, reason_codes: list[str] | None = None,
                  comment: str = "") -> Review:
    reason_codes = list(dict.fromkeys(reason_codes or []))
    comment = comment.strip()
    if verdict not in Verdict.values:
        raise CurationError("The verdict must be accept or reject.")
    item = _lock_item(item_id)
    unknown = set(reason_codes) - reason_code_set(item.stage)
    if unknown:
        raise CurationError(f"Unknown reason code(s) for this stage: {', '.join(sorted(unknown))}.")
    if verdict == Verdict.REJECT and not reason_codes:
        raise CurationError("A rejection needs at least one reason.")
    if OTHER in reason_codes and not comment:
        raise CurationError("Reason OTHER needs a comment saying what is wrong.")
    # (item, annotator) is unique for claims: no ORDER BY needed. Submit deletes the claim and
    # undo restores it, so an annotator holding a claim has no review of the item.
    claim = queue.claim_of(item_id=item.pk, annotator_id=annotator.pk)
    if claim is None and Review.objects.filter(item=item, annotator=annotator).exists():
        raise CurationError("You have already reviewed this item.")
    if item.state != ItemState.OPEN or item.excluded:
        raise CurationError("This item no longer takes reviews.")
    now = timezone.now()
    if claim is None:
        raise CurationError("Take the item from the queue before reviewing it.")
    if not claim.is_active(now) and item.review_count + _active_claims_of_others(item, annotator, now) >= item.required_reviews:
        claim.delete()
        raise CurationError("Your claim on this item expired and other annotators took it.")
    before = _item_snapshot(item)
    review = Review(item=item, annotator=annotator, verdict=verdict, reason_codes=reason_codes, comment=comment,
                    created_at=now, updated_at=now)
    review.pk = hot_sql.insert(Review, item=item.pk, annotator=annotator.pk, verdict=verdict,
                               reason_codes=reason_codes, comment=comment, created_at=now, updated_at=now)
    review._state.adding = False
    review.claimed_at = claim.claimed_at  # not stored on the review: callers measure time spent
    hot_sql.delete(Claim, id=claim.pk)
    item.review_count += 1
    if item.review_count >= item.required_reviews:
        # Every review is in: any other claim on the item (a lapsed one) is moot now.
        hot_sql.delete(Claim, item=item.pk)
        _conclude(item, annotator)
        webhooks.emit("item.fully_reviewed", item_id=item.pk, stage=item.stage, object_id=item.object_id,
                      state=item.state, decision=item.decision)
    else:
        hot_sql.update(ReviewItem, item.pk, review_count=item.review_count)
    _audit(annotator, AuditEvent.Action.VERDICT, item, before, {**_item_snapshot(item), **_review_snapshot(review)})
    return review


@transaction.atomic
def review_skip(*, annotator, item_id: int, reason: str) -> Skip:
    reason = reason.strip()
    if not reason:
        raise CurationError("Say why you skip the item.")
    item = _lock_item(item_id)
    if Review.objects.filter(item=item, annotator=annotator).exists():
        raise CurationError("You have already reviewed this item; undo your verdict instead.")
    if Skip.objects.filter(item=item, annotator=annotator).exists():
        raise CurationError("You have already skipped this item.")
    skip = Skip.objects.create(item=item, annotator=annotator, reason=reason[:300])
    Claim.objects.filter(item=item, annotator=annotator).delete()
    _audit(annotator, AuditEvent.Action.SKIP, item, _item_snapshot(item), {"reason": skip.reason})
    return skip


def last_review(*, annotator) -> Review | None:
    return queue.last_review(annotator_id=annotator.pk)


@transaction.atomic
def review_undo(*, annotator) -> ReviewItem:
    """Withdraw the annotator's most recent verdict while its item still awaits reviews.

    The annotator gets the claim back and reviews the item again.
    """
    last = last_review(annotator=annotator)
    if last is None:
        raise CurationError("You have no verdict to undo.")
    item = _lock_item(last.item_id)
    last = Review.objects.filter(pk=last.pk).first()
    if last is None:
        raise CurationError("That verdict was already withdrawn.")
    if item.excluded:
        raise CurationError("That item was excluded (an ancestor was rejected); its verdict stays as it is.")
    if item.state != ItemState.OPEN:
        # Once every review is in, whether undo still works would tell the annotator how the
        # others voted (decided on agreement vs. waiting for adjudication), breaking blindness.
        raise CurationError("All reviews of that item are in; its verdicts can no longer be undone.")
    before = {**_item_snapshot(item), **_review_snapshot(last)}
    last.delete()
    now = timezone.now()
    item.review_count -= 1
    item.save(update_fields=["review_count"])
    _claim_upsert(item, annotator, now)
    _audit(annotator, AuditEvent.Action.UNDO, item, before, _item_snapshot(item))
    return item


# --------------------------------------------------------------------------- adjudication


def adjudication_queue(*, stage: str | None = None) -> QuerySet[ReviewItem]:
    qs = ReviewItem.objects.filter(effective_q(Effective.AWAITING))
    if stage:
        qs = qs.filter(stage=stage)
    return qs.order_by("-has_warnings", "id")


def may_adjudicate(user, item: ReviewItem) -> bool:
    """Adjudicators decide items they did not review themselves (admins may decide any)."""
    roles = user_roles(user)
    if ADMIN in roles:
        return True
    return ADJUDICATOR in roles and not item.reviews.filter(annotator=user).exists()


@transaction.atomic
def item_resolve(*, adjudicator, item_id: int, decision: str, note: str) -> ReviewItem:
    """Decide a disputed item, or reverse an earlier decision; the cascade follows either way."""
    note = note.strip()
    if decision not in Verdict.values:
        raise CurationError("The decision must be accept or reject.")
    if not note:
        raise CurationError("Write a note explaining the decision.")
    item = _lock_item(item_id)
    if item.state == ItemState.OPEN:
        raise CurationError("This item still waits for its reviews.")
    if item.excluded:
        raise CurationError(f"{exclusion_reason(item)}: the item is out of curation until that decision changes.")
    if not may_adjudicate(adjudicator, item):
        raise CurationError("You reviewed this item yourself; another adjudicator must decide it.")
    before = _item_snapshot(item)
    previous = Resolution.objects.filter(item=item).first()
    if previous:
        before.update({"resolution_decision": previous.decision, "resolution_note": previous.note,
                       "resolution_by": previous.adjudicator_id})
    Resolution.objects.update_or_create(
        item=item, defaults={"adjudicator": adjudicator, "decision": decision, "note": note,
                             "created_at": timezone.now()},
    )
    _decide(item, decision, adjudicator)
    webhooks.emit("item.adjudicated", item_id=item.pk, stage=item.stage, object_id=item.object_id, decision=decision)
    _audit(adjudicator, AuditEvent.Action.RESOLVE, item, before, {**_item_snapshot(item), "note": note})
    return item


# --------------------------------------------------------------------------- blindness and reads


def reviews_visible_to(user) -> QuerySet[Review]:
    """The reviews `user` may see. The one blindness rule for pages, the admin and the API.

    Admins see everything. Everyone sees their own reviews. Nobody else sees another annotator's
    verdict while they could still act on it: adjudicators see verdicts once every review is in
    (and not on items they reviewed themselves until decided, since undo stays possible);
    researchers and annotators see them only on decided items (annotators: items they reviewed).
    """
    roles = user_roles(user)
    if not roles and not getattr(user, "is_authenticated", False):
        return Review.objects.none()
    if ADMIN in roles:
        return Review.objects.all()
    mine = Review.objects.filter(item=OuterRef("item"), annotator=user)
    visible = Q(annotator_id=user.pk)
    if ADJUDICATOR in roles:
        visible |= Q(item__state=ItemState.DECIDED) | (Q(item__state=ItemState.DISAGREEMENT) & ~Exists(mine))
    if RESEARCHER in roles:
        visible |= Q(item__state=ItemState.DECIDED)
    visible |= Q(item__state=ItemState.DECIDED) & Exists(mine)
    return Review.objects.filter(visible)


def curated_tests() -> QuerySet[Test]:
    """Tests whose conversation was accepted and no ancestor was rejected."""
    return Test.objects.filter(status=CurationStatus.ACCEPTED)


def skip_reason_label(code: str) -> str:
    return dict(SKIP_REASONS).get(code, code)

"""Curation workflows: claim, review, skip, undo, resolve; blind visibility; public read helpers.

Concurrency contract of the queue: every change to an item's claims, reviews or state happens
inside one transaction that holds the item's row lock (Postgres: SELECT … FOR UPDATE; SQLite:
the IMMEDIATE transaction mode takes the database write lock when the block starts). So
"submitted reviews + active claims ≤ required reviews" holds at every commit. Deletes and updates
of an item's claims, assignments and resolution filter the rows through
projects.scoping.rows_to_write, whose conditions PostgreSQL re-checks after a lock wait (the
scoped managers' JOIN would put them in a sub-select it does not re-check).

The reviews package's one door: other curation packages and other apps call what is here (the
workflows below and the names re-exported from claims, lineage, state and queue), never the
modules behind it.
"""
from __future__ import annotations

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

import webhooks
from almita_web.roles import ADJUDICATOR, ADMIN, RESEARCHER, user_roles
from curation.guidance import services as guidance
from curation.models import AuditEvent, Claim, ItemState, Resolution, Review, ReviewItem, Skip, Verdict
from curation.reviews import discussion, queue
from curation.reviews.claims import (  # noqa: F401  (re-exported: the workflow's public surface stays here)
    ASSIGNED_SHOWN,
    CurationError,
    _audit,
    _claim_expiry,
    _claim_upsert,
    _item_snapshot,
    _review_snapshot,
    assigned_items,
    held_claim,
    held_claims,
    queue_candidates,
    review_claim_next,
)
from curation.reviews.lineage import (  # noqa: F401  (re-exported for other apps)
    STAGE_MODELS,
    STRICT,
    artifact_for,
    cascade_apply,
    descendant_statuses,
    items_sync,
    items_sync_throttled,
    policy_for,
)
from curation.reviews.assignment import progress as assignment_progress  # noqa: F401  (re-exported, #30)
from curation.reviews.digest import digest_enabled, send_digest  # noqa: F401  (re-exported)
from curation.reviews.queue import count_candidates  # noqa: F401  (re-exported)
from curation.reviews.state import Effective, effective_q, exclusion_reason  # noqa: F401  (re-exported)
from generation.models import CurationStatus, Test
from projects.scoping import rows_to_write


def _lock_item(item_id: int) -> ReviewItem:
    item = queue.item_by_id(item_id, lock=True)
    if item is None:
        raise CurationError("No such review item.")
    return item


def _active_claims_of_others(item: ReviewItem, annotator, now) -> int:
    return queue.active_claims_of_others(item_id=item.pk, annotator_id=annotator.pk, now=now)


def _conclude(item: ReviewItem, actor) -> None:
    """All required reviews are in: decide, or send to adjudication (item lock held)."""
    verdicts = queue.verdicts_of(item_id=item.pk)
    if len(verdicts) == 1:
        _decide(item, verdicts.pop(), actor)
    elif policy_for(item.stage) == STRICT:
        _decide(item, Verdict.REJECT, actor)
    else:
        item.state = ItemState.DISAGREEMENT
        ReviewItem.objects.filter(pk=item.pk).update(state=item.state, review_count=item.review_count)


def _decide(item: ReviewItem, decision: str, actor) -> None:
    item.state = ItemState.DECIDED
    item.decision = decision
    item.decided_at = timezone.now()
    ReviewItem.objects.filter(pk=item.pk).update(state=item.state, decision=decision, decided_at=item.decided_at,
                                                 review_count=item.review_count)
    changes = cascade_apply(item, actor)
    _audit(actor, AuditEvent.Action.CASCADE, item, {}, {"decision": decision, "changed": changes})


def review_submit(**kwargs) -> Review:
    """Record `annotator`'s verdict on the item they hold; concludes the item when it is complete."""
    with transaction.atomic():
        return review_submit_within(**kwargs)


def review_submit_within(*, annotator, item_id: int, verdict: str, reason_codes: list[str] | None = None,
                         comment: str = "") -> Review:
    """review_submit's body, for a caller whose own atomic block holds it (no savepoint of its own)."""
    reason_codes = list(dict.fromkeys(reason_codes or []))
    comment = comment.strip()
    if verdict not in Verdict.values:
        raise CurationError("The verdict must be accept or reject.")
    item = _lock_item(item_id)
    unknown = set(reason_codes) - guidance.reason_code_set(item.stage)
    if unknown:
        raise CurationError(f"Unknown reason code(s) for this stage: {', '.join(sorted(unknown))}.")
    if verdict == Verdict.REJECT and not reason_codes:
        raise CurationError("A rejection needs at least one reason.")
    if guidance.OTHER in reason_codes and not comment:
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
    review = Review.objects.create(item=item, annotator=annotator, verdict=verdict, reason_codes=reason_codes,
                                   comment=comment, created_at=now, updated_at=now)
    review.claimed_at = claim.claimed_at  # not stored on the review: callers measure time spent
    item.review_count += 1
    if item.review_count >= item.required_reviews:
        # Every review is in: this claim and any other on the item (a lapsed one) are moot now.
        rows_to_write(Claim).filter(item_id=item.pk).delete()
        _conclude(item, annotator)
        webhooks.emit("item.fully_reviewed", item_id=item.pk, stage=item.stage, object_id=item.object_id,
                      state=item.state, decision=item.decision)
    else:
        Claim.objects.filter(pk=claim.pk).delete()
        ReviewItem.objects.filter(pk=item.pk).update(review_count=item.review_count)
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
    rows_to_write(Claim).filter(item_id=item.pk, annotator_id=annotator.pk).delete()
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
    discussion.notify_overturned(item, decision, note)
    webhooks.emit("item.adjudicated", item_id=item.pk, stage=item.stage, object_id=item.object_id, decision=decision)
    _audit(adjudicator, AuditEvent.Action.RESOLVE, item, before, {**_item_snapshot(item), "note": note})
    return item


# --------------------------------------------------------------------------- blindness and reads


def reviews_visible_to(user) -> QuerySet[Review]:
    """The reviews `user` may see. The one blindness rule for pages, the admin and the API.

    Admins see everything. Everyone sees their own reviews. Nobody else sees another annotator's
    verdict while they could still act on it: adjudicators see verdicts once every review is in
    (and not on items they reviewed themselves until decided, since undo stays possible);
    researchers see them on decided items; annotators never see another annotator's verdict.
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
    # An annotator (who is neither) sees their own reviews only: seeing the others' once an
    # item is decided would tell an agreement (decided at once) from a disagreement (later).
    return Review.objects.filter(visible)


def curated_tests() -> QuerySet[Test]:
    """Tests whose conversation was accepted and no ancestor was rejected."""
    return Test.objects.filter(status=CurationStatus.ACCEPTED)


def skip_reason_label(code: str) -> str:
    return dict(guidance.SKIP_REASONS).get(code, code)

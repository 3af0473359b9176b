"""Verdict history, changing a verdict while the item waits, comment threads and notifications.

Blindness (design.md) shapes every rule here:
- An annotator's own verdicts show only "waiting for other reviews" or "all reviews in", the same
  words the review page uses, never whether the others agreed.
- A verdict may be changed while the item still waits for other reviews, exactly as long as undo
  works; once every review is in it is fixed (whether change still works would otherwise tell how
  the others voted).
- A thread is readable by the item's reviewers once they submitted, by adjudicators who did not
  review it, and by admins. Reviewers see comments by non-reviewers (an adjudicator) only once the
  item is decided: an adjudicator's comment on an undecided item would say it is disputed.
- Adjudication that decides against a verdict tells its annotator, with the note.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.core.cache import cache
from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from almita_web.roles import ADJUDICATOR, ADMIN, user_roles
from curation.guidance import services as guidance
from curation.models import AuditEvent, Comment, Flag, ItemState, Notification, Resolution, Review, ReviewItem, Verdict
from curation.reviews.claims import CurationError, _audit, _review_snapshot
from curation.reviews import queue
from projects.scoping import rows_to_write

COMMENT_MAX = 4000
WAITING = "waiting"
ALL_IN = "all_in"
OVERTURNED = "overturned"
STATUS_LABELS = {WAITING: "Waiting for other reviews", ALL_IN: "All reviews in", OVERTURNED: "Overturned by adjudication"}


# --------------------------------------------------------------------------- own verdicts


@dataclass
class OwnVerdict:
    review: Review
    status: str
    can_change: bool

    @property
    def status_label(self) -> str:
        return STATUS_LABELS[self.status]


def my_verdicts(*, annotator, stage: str = "", verdict: str = "", status: str = "") -> QuerySet[Review]:
    """The annotator's reviews, newest first, filtered; annotate with `overturned` for the status."""
    contrary = Resolution.objects.filter(item=OuterRef("item")).exclude(decision=OuterRef("verdict"))
    qs = (Review.objects.filter(annotator=annotator).select_related("item")
          .annotate(overturned=Exists(contrary)).order_by("-created_at", "-id"))
    if stage:
        qs = qs.filter(item__stage=stage)
    if verdict in Verdict.values:
        qs = qs.filter(verdict=verdict)
    if status == WAITING:
        qs = qs.filter(item__state=ItemState.OPEN)
    elif status == ALL_IN:
        qs = qs.exclude(item__state=ItemState.OPEN).filter(overturned=False)
    elif status == OVERTURNED:
        qs = qs.filter(overturned=True)
    return qs


def describe_own(review: Review) -> OwnVerdict:
    item = review.item
    if getattr(review, "overturned", False):
        status = OVERTURNED
    else:
        status = WAITING if item.state == ItemState.OPEN else ALL_IN
    return OwnVerdict(review=review, status=status, can_change=item.state == ItemState.OPEN and not item.excluded)


@transaction.atomic
def verdict_change(*, annotator, item_id: int, verdict: str, reason_codes: list[str] | None = None,
                   comment: str = "") -> Review:
    """Replace the annotator's verdict on an item that still waits for its other reviews (audited).

    Flags placed with the old verdict stay with a rejection and go with an acceptance.
    """
    reason_codes = list(dict.fromkeys(reason_codes or []))
    comment = comment.strip()
    if verdict not in Verdict.values:
        raise CurationError("The verdict must be accept or reject.")
    item = queue.item_by_id(item_id, lock=True)
    if item is None:
        raise CurationError("No such review item.")
    review = Review.objects.filter(item=item, annotator=annotator).first()
    if review is None:
        raise CurationError("You have not reviewed this item.")
    if item.excluded:
        raise CurationError("That item was excluded (an ancestor was rejected); its verdict stays as it is.")
    if item.state != ItemState.OPEN:
        raise CurationError("All reviews of that item are in; its verdict can no longer be changed.")
    unknown = set(reason_codes) - guidance.reason_code_set(item.stage)
    if unknown:
        raise CurationError(f"Unknown reason code(s) for this stage: {', '.join(sorted(unknown))}.")
    flags = Flag.objects.filter(review=review)
    if verdict == Verdict.REJECT and not reason_codes:
        reason_codes = list(dict.fromkeys(flags.values_list("reason", flat=True)))
        if not reason_codes:
            raise CurationError("A rejection needs at least one reason.")
    if guidance.OTHER in reason_codes and not comment:
        raise CurationError("Reason OTHER needs a comment saying what is wrong.")
    before = {**_review_snapshot(review), "flags": flags.count()}
    if verdict == Verdict.ACCEPT:
        flags.delete()
        reason_codes = []
    review.verdict, review.reason_codes, review.comment = verdict, reason_codes, comment
    review.updated_at = timezone.now()
    review.save(update_fields=["verdict", "reason_codes", "comment", "updated_at"])
    _audit(annotator, AuditEvent.Action.CHANGE, item, before, {**_review_snapshot(review), "flags": flags.count()})
    return review


# --------------------------------------------------------------------------- comments


def _reviewer_ids(item: ReviewItem) -> set[int]:
    return set(Review.objects.filter(item=item).values_list("annotator_id", flat=True))


def may_discuss(user, item: ReviewItem) -> bool:
    roles = user_roles(user)
    if ADMIN in roles:
        return True
    if user.pk in _reviewer_ids(item):
        return True  # a reviewer, after submitting (a held claim is not a review)
    # Once every review is in nobody can still claim the item, so nobody reads it before submitting.
    return ADJUDICATOR in roles and item.state != ItemState.OPEN


def thread(user, item: ReviewItem, *, names: bool = False) -> list[Comment] | None:
    """The comments `user` may read on `item`, oldest first; None when the thread is closed to them.

    Each comment gets `shown_as`: "you", or the author's role on the item ("a reviewer", "an
    adjudicator"), or the username when `names` (an admin, or an adjudicator who asked for names).
    """
    if not may_discuss(user, item):
        return None
    comments = list(Comment.objects.filter(item=item).select_related("author"))
    roles = user_roles(user)
    reviewers = _reviewer_ids(item)
    if ADMIN not in roles and user.pk in reviewers and item.state != ItemState.DECIDED:
        comments = [c for c in comments if c.author_id in reviewers]
    for c in comments:
        if c.author_id == user.pk:
            c.shown_as = "you"
        elif names or ADMIN in roles:
            c.shown_as = c.author.get_username()
        else:
            c.shown_as = "a reviewer" if c.author_id in reviewers else "an adjudicator"
    return comments


@transaction.atomic
def comment_add(*, author, item_id: int, body: str) -> Comment:
    body = (body or "").strip()
    if not body:
        raise CurationError("Write something before posting.")
    if len(body) > COMMENT_MAX:
        raise CurationError(f"A comment holds at most {COMMENT_MAX} characters; this one has {len(body)}.")
    item = queue.item_by_id(item_id, lock=True)
    if item is None:
        raise CurationError("No such review item.")
    if not may_discuss(author, item):
        raise CurationError("Submit your verdict before joining this item's discussion.")
    comment = Comment.objects.create(item=item, author=author, body=body)
    _audit(author, AuditEvent.Action.COMMENT, item, {}, {"comment_id": comment.pk, "length": len(body)})
    return comment


# --------------------------------------------------------------------------- notifications


def notify_overturned(item: ReviewItem, decision: str, note: str) -> int:
    """Tell each annotator whose verdict the adjudication went against (item lock held)."""
    label = Verdict(decision).label.lower()
    rows = [Notification(user_id=r.annotator_id, item=item, kind=Notification.Kind.OVERTURNED,
                         message=f"Adjudication decided {label} on {item}; you said {r.get_verdict_display().lower()}. "
                                 f"Note: {note}")
            for r in Review.objects.filter(item=item).exclude(verdict=decision)]
    Notification.objects.bulk_create(rows)
    users = [_unread_key(n.user_id) for n in rows]
    transaction.on_commit(lambda: cache.delete_many(users))
    return len(rows)


def notifications_of(user) -> QuerySet[Notification]:
    return Notification.objects.filter(user=user).select_related("item")


UNREAD_CACHE_SECONDS = 600


def _unread_key(user_id: int) -> str:
    """Per user and project: notifications are counted in the current project (issue #30)."""
    from projects.context import current_slug

    return f"almita:unread:{current_slug()}:{user_id}"


def unread_count(user) -> int:
    """The navigation's count, from the cache: without it the review page (the product's most frequent
    request, pinned at 5 queries by tests/curation/reviews/test_review_path_queries.py) read one more.
    Every change of a user's notifications deletes their entry, so the count is never stale."""
    if not getattr(user, "is_authenticated", False):
        return 0
    count = cache.get(_unread_key(user.pk))
    if count is None:
        count = Notification.objects.filter(user=user, read_at__isnull=True).count()
        cache.set(_unread_key(user.pk), count, UNREAD_CACHE_SECONDS)
    return count


def mark_read(user) -> int:
    # `read_at IS NULL` in the UPDATE's own WHERE (rows_to_write): a concurrent mark-read's rows
    # are not counted and stamped again.
    n = rows_to_write(Notification).filter(user_id=user.pk, read_at__isnull=True).update(read_at=timezone.now())
    cache.delete(_unread_key(user.pk))
    return n

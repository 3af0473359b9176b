"""Work assigned to named annotators (issue #30 item 4), besides "next item" claiming.

An assignment holds one of the item's review places for its annotator while it is active (not
released) and they have neither reviewed nor skipped the item: the queue counts those holding
assignments with the active claims against the item's capacity, and offers the item first to its
assignees and to nobody else beyond the places left. It ends when the annotator submits (their
review takes the place; undoing the verdict gives the place back to the assignment) or skips, and
when an adjudicator or admin releases it (active = False, released_at). Deriving "done" from the
review rather than writing it keeps submit, skip and undo at the queries they had.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone


class Assignment(models.Model):
    # No column index of its own: the indexes below start with them.
    item = models.ForeignKey("curation.ReviewItem", on_delete=models.CASCADE, related_name="assignments",
                             db_index=False)
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments",
                                  db_index=False)
    assigned_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    active = models.BooleanField(default=True)  # False once released
    released_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            # One active assignment per annotator and item; released ones are history.
            models.UniqueConstraint(fields=["item", "annotator"], condition=Q(active=True),
                                    name="assignment_one_active"),
            models.CheckConstraint(condition=Q(active=True, released_at__isnull=True)
                                   | Q(active=False, released_at__isnull=False), name="assignment_released_iff_inactive"),
        ]
        indexes = [
            # The capacity count in the queue's candidate query, per item.
            models.Index(fields=["item", "active", "annotator"], name="assignment_item_active"),
            # An annotator's assigned items (claim-next looks there first) and their progress.
            models.Index(fields=["annotator", "active", "item"], name="assignment_annotator_active"),
        ]



def holding_q() -> Q:
    """Assignments that hold a place now: active, and their annotator has neither reviewed nor
    skipped the item (the same rule as the queue's SQL, curation.reviews.queue)."""
    from curation.models.reviews import Review, Skip

    item, annotator = OuterRef("item_id"), OuterRef("annotator_id")
    return (Q(active=True) & ~Exists(Review.objects.filter(item_id=item, annotator_id=annotator))
            & ~Exists(Skip.objects.filter(item_id=item, annotator_id=annotator)))

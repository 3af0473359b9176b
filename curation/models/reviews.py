"""Blind double review, adjudication and the audit log.

A ReviewItem stands for one reviewable artifact (procedure with its APIs, flowgraph,
conversation graph or conversation), so the queue, reviews and resolutions work the same way
for every stage.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from projects.scoping import ProjectManager, owner_scoped_manager, project_field


class ReviewStage(models.TextChoices):
    PROCEDURE = "procedure", "Procedure with APIs"
    FLOWGRAPH = "flowgraph", "Flowgraph"
    CONVERSATION_GRAPH = "conversation_graph", "Conversation graph"
    CONVERSATION = "conversation", "Conversation"


class Verdict(models.TextChoices):
    ACCEPT = "accept", "Accept"
    REJECT = "reject", "Reject"


class ItemState(models.TextChoices):
    OPEN = "open", "Needs reviews"
    DISAGREEMENT = "disagreement", "Awaiting adjudication"
    DECIDED = "decided", "Decided"


class ReviewItem(models.Model):
    project = project_field()
    objects = ProjectManager()
    stage = models.CharField(max_length=32, choices=ReviewStage.choices)
    object_id = models.PositiveBigIntegerField()
    required_reviews = models.PositiveSmallIntegerField(default=2)
    state = models.CharField(max_length=16, choices=ItemState.choices, default=ItemState.OPEN)
    has_warnings = models.BooleanField(default=False)
    decision = models.CharField(max_length=8, choices=Verdict.choices, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Submitted reviews, kept in step by the services while they hold the item's row lock; lets
    # the queue order "one review short first" from an index instead of counting per request.
    review_count = models.PositiveSmallIntegerField(default=0)
    # An ancestor artifact was rejected: nobody should spend time reviewing this one.
    excluded = models.BooleanField(default=False)
    # An adjudicator or admin took it out of curation in the explorer ("Exclude"): it stays
    # excluded, with everything below it, until they include it again, whatever the cascade does.
    withheld = models.BooleanField(default=False)
    # Its artifact was corrected, or a correction above it marked it (issue #31 item 5): the review
    # page and the queue read the notice only then, so the common page costs no query for it.
    corrected = models.BooleanField(default=False)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["stage", "object_id"], name="reviewitem_unique_target"),
            models.CheckConstraint(condition=Q(stage__in=ReviewStage.values), name="reviewitem_stage_valid"),
            models.CheckConstraint(condition=Q(state__in=ItemState.values), name="reviewitem_state_valid"),
            models.CheckConstraint(condition=Q(required_reviews__gte=1), name="reviewitem_needs_a_review"),
            # Never more verdicts than the item asked for.
            models.CheckConstraint(
                condition=Q(review_count__lte=models.F("required_reviews")), name="reviewitem_not_over_reviewed"
            ),
            # A decision is recorded exactly when the item is decided.
            models.CheckConstraint(
                condition=(Q(state="decided") & Q(decision__in=Verdict.values) & Q(decided_at__isnull=False))
                | (~Q(state="decided") & Q(decision="") & Q(decided_at__isnull=True)),
                name="reviewitem_decision_iff_decided",
            ),
        ]
        indexes = [
            models.Index(fields=["stage", "state"]),
            # The queue's filter then its exact order, so Postgres reads the first candidates off
            # the index instead of sorting a whole group by id.
            models.Index(fields=["stage", "state", "excluded", "-has_warnings", "-review_count", "id"],
                         name="reviewitem_queue_order"),
            # The same led by the project (#30): with ten projects Postgres walked the other nine
            # projects' open items of the stage before reaching the current one's.
            models.Index(fields=["project", "stage", "state", "excluded", "-has_warnings", "-review_count", "id"],
                         name="reviewitem_project_queue"),
        ]

    def __str__(self) -> str:
        return f"{self.get_stage_display()} #{self.object_id}"

    @property
    def is_decided(self) -> bool:
        return self.state == ItemState.DECIDED


class Claim(models.Model):
    """An annotator holds an item until they submit, skip, or the claim expires."""
    objects = owner_scoped_manager("item__project_id")

    # Neither key has a column index of its own: the unique (item, annotator) and the index
    # (annotator, expires_at) below start with them.
    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="claims", db_index=False)
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="claims",
                                  db_index=False)
    claimed_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"], name="claim_unique_item_annotator"),
            models.CheckConstraint(condition=Q(expires_at__gt=models.F("claimed_at")), name="claim_expires_after_claimed"),
        ]
        # An annotator's active claims (held item, every claim-next and submit) are read by this
        # index. Claims are few but short-lived: every verdict deletes one, and until vacuum the
        # dead entries stay in every index. Through (item, expires_at) or item alone Postgres read
        # every annotator's entries, dead ones included, and each one's row (300-2,000 pages after
        # 3,000 claims, 0.3-0.6 ms); tests/curation/test_review_path_queries.py bounds it.
        indexes = [models.Index(fields=["annotator", "expires_at"], name="claim_annotator_expires")]

    def is_active(self, now=None) -> bool:
        return self.expires_at > (now or timezone.now())


class Skip(models.Model):
    objects = owner_scoped_manager("item__project_id")
    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="skips")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="skips")
    reason = models.CharField(max_length=300)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"], name="skip_unique_item_annotator"),
        ]


class Review(models.Model):
    objects = owner_scoped_manager("item__project_id")
    # No column index of their own: the unique (item, annotator) and review_annotator_recent start with them.
    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="reviews", db_index=False)
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="reviews",
                                  db_index=False)
    verdict = models.CharField(max_length=8, choices=Verdict.choices)
    reason_codes = models.JSONField(default=list, blank=True)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"], name="review_unique_item_annotator"),
            models.CheckConstraint(condition=Q(verdict__in=Verdict.values), name="review_verdict_valid"),
        ]
        # The annotator's latest review (the undo button, on every review page) is the first entry
        # read backwards; by annotator alone it sorted all of the annotator's reviews each time.
        indexes = [models.Index(fields=["annotator", "created_at", "id"], name="review_annotator_recent")]

    def is_blind_for(self, user) -> bool:
        """True when `user` must not see this verdict (the rule lives in services.reviews_visible_to)."""
        from curation.reviews.services import reviews_visible_to

        return not reviews_visible_to(user).filter(pk=self.pk).exists()


class Resolution(models.Model):
    objects = owner_scoped_manager("item__project_id")
    item = models.OneToOneField(ReviewItem, on_delete=models.CASCADE, related_name="resolution")
    adjudicator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="resolutions")
    decision = models.CharField(max_length=8, choices=Verdict.choices)
    note = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(decision__in=Verdict.values), name="resolution_decision_valid"),
            models.CheckConstraint(condition=~Q(note=""), name="resolution_note_required"),
        ]


class AuditEvent(models.Model):
    project = project_field()
    objects = ProjectManager()
    class Action(models.TextChoices):
        CLAIM = "claim", "Claim"
        SKIP = "skip", "Skip"
        VERDICT = "verdict", "Verdict"
        UNDO = "undo", "Undo"
        CHANGE = "change", "Verdict changed"
        COMMENT = "comment", "Comment"
        CORRECT = "correct", "Corrected by an adjudicator"
        RESOLVE = "resolve", "Resolution"
        CASCADE = "cascade", "Cascade"
        EXCLUDE = "exclude", "Excluded by a rejected ancestor"
        RESTORE = "restore", "Restored (ancestor no longer rejected)"
        ASSIGN = "assign", "Assigned"
        RELEASE = "release", "Assignment released"
        SETTINGS = "settings", "Project settings changed"

    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    action = models.CharField(max_length=16, choices=Action.choices)
    item = models.ForeignKey(ReviewItem, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit")
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-at", "-id"]

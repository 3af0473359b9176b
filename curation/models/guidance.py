"""Rows of the review-at-scale features (issue #16): flags, review metadata, gold items, guidelines.

Kept apart from the queue's models (curation/models/reviews.py) because those change for other
reasons.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from projects.scoping import ProjectManager, project_field

from curation.models.reviews import Review, ReviewItem, ReviewStage, Verdict


class FlagKind(models.TextChoices):
    NODE = "node", "Node"
    EDGE = "edge", "Edge"
    TURN = "turn", "Turn"


class Flag(models.Model):
    """One reason attached to one node, edge or conversation turn by one review."""

    review = models.ForeignKey(Review, on_delete=models.CASCADE, related_name="flags")
    kind = models.CharField(max_length=8, choices=FlagKind.choices)
    # A node id, an edge as "source->target", or a turn's 0-based index.
    target = models.CharField(max_length=300)
    reason = models.CharField(max_length=64)
    comment = models.TextField(blank=True, max_length=1000)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=FlagKind.values), name="flag_kind_valid"),
            models.UniqueConstraint(fields=["review", "kind", "target", "reason"], name="flag_unique_per_review"),
        ]

    @property
    def label(self) -> str:
        if self.kind == FlagKind.TURN:
            return f"turn {int(self.target) + 1}"
        return f"{self.kind} {self.target}"


def flags_text(flags) -> str:
    """One cell of the verdict CSV: `kind target: REASON (comment)` joined by ' | '."""
    return " | ".join(f"{f.kind} {f.target}: {f.reason}" + (f" ({f.comment})" if f.comment else "") for f in flags)


class ReviewMeta(models.Model):
    """What a review was made under: time spent on the item and the guideline version shown."""

    review = models.OneToOneField(Review, on_delete=models.CASCADE, related_name="meta")
    # From the claim to the verdict; None when the claim was not found (e.g. an API submission).
    seconds = models.PositiveIntegerField(null=True, blank=True)
    guideline_version = models.PositiveIntegerField(null=True, blank=True)


class GoldOrigin(models.TextChoices):
    MARKED = "marked", "Marked by an admin"
    SEEDED = "seeded", "Seeded known-bad copy"


class GoldItem(models.Model):
    """An item whose right verdict is known: checks annotators, never reaches a release."""
    project = project_field()
    objects = ProjectManager()

    item = models.OneToOneField(ReviewItem, on_delete=models.CASCADE, related_name="gold")
    expected = models.CharField(max_length=8, choices=Verdict.choices)
    origin = models.CharField(max_length=8, choices=GoldOrigin.choices, default=GoldOrigin.MARKED)
    mutation = models.CharField(max_length=300, blank=True)
    source = models.ForeignKey(ReviewItem, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=Q(expected__in=Verdict.values), name="golditem_expected_valid"),
            models.CheckConstraint(condition=Q(origin__in=GoldOrigin.values), name="golditem_origin_valid"),
        ]


class GuidelineVersion(models.Model):
    """One saved edit of a stage's guidelines and human-judgement reason codes (per project)."""

    project = project_field()
    objects = ProjectManager()

    stage = models.CharField(max_length=32, choices=ReviewStage.choices)
    version = models.PositiveIntegerField()
    summary = models.TextField(help_text="Markdown")
    checks = models.JSONField(default=list, help_text="Markdown strings")
    # [[code, description], ...]: the checkboxes reviewers tick, each given a key in order.
    human_codes = models.JSONField(default=list)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["stage", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["project", "stage", "version"], name="guidelineversion_unique"),
            models.CheckConstraint(condition=Q(stage__in=ReviewStage.values), name="guidelineversion_stage_valid"),
            models.CheckConstraint(condition=Q(version__gte=1), name="guidelineversion_positive"),
        ]

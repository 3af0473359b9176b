"""Adjudicators' corrections (issue #31 item 5): every version of an edited artifact, and the marks
an edit leaves on the artifacts derived from it.

The artifact keeps its id, so its review item, reviews and lineage stay linked; version 1 is the
content as generated, saved on the first edit.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class ChangeKind(models.TextChoices):
    ORIGINAL = "original", "Original"
    TEXT = "text", "Text only"
    STRUCTURE = "structure", "Structure"


class ArtifactVersion(models.Model):
    stage = models.CharField(max_length=32)
    object_id = models.PositiveBigIntegerField()
    number = models.PositiveIntegerField()
    # Flowgraph / conversation graph: {"kind", "nodes", "edges"}; conversation: {"messages": [...]}.
    content = models.JSONField(default=dict)
    previous = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    editor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="+")
    note = models.TextField(blank=True)
    change = models.CharField(max_length=16, choices=ChangeKind.choices, default=ChangeKind.ORIGINAL)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["stage", "object_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["stage", "object_id", "number"], name="artifactversion_unique_number"),
            models.CheckConstraint(condition=Q(number__gte=1), name="artifactversion_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.stage} #{self.object_id} v{self.number}"


class MarkKind(models.TextChoices):
    REVIEW = "review", "Review again"
    REGENERATE = "regenerate", "Regenerate"


class CorrectionMark(models.Model):
    """A descendant of a corrected graph: to look at again (text edit) or to regenerate (structure)."""

    version = models.ForeignKey(ArtifactVersion, on_delete=models.CASCADE, related_name="marks")
    stage = models.CharField(max_length=32)
    object_id = models.PositiveBigIntegerField()
    kind = models.CharField(max_length=16, choices=MarkKind.choices)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["stage", "object_id"], name="correctionmark_target")]
        constraints = [
            models.UniqueConstraint(fields=["version", "stage", "object_id"], name="correctionmark_unique"),
            models.CheckConstraint(condition=Q(kind__in=MarkKind.values), name="correctionmark_kind_valid"),
        ]

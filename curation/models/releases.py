"""Immutable releases: a release, its frozen tests and the supporting records they name."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from projects.scoping import ProjectManager, project_field


class ReleaseKind(models.TextChoices):
    CURATED = "curated", "Curated (accepted items)"
    AUTOMATIC = "automatic", "Automatic (passed automatic filters)"


class Release(models.Model):
    """An immutable snapshot of a curated (or automatic) dataset; versions are numbered per project.

    Its tests and records (ReleaseTest, ReleaseRecord) are reached through it and stay unscoped."""
    project = project_field()
    objects = ProjectManager()

    Kind = ReleaseKind

    name = models.CharField(max_length=200)
    version = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.CURATED)
    filters = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    content_hash = models.CharField(max_length=64)
    manifest = models.JSONField(default=dict)
    card = models.TextField(blank=True)
    # The fidelity audit of the frozen tests (curation.releases.audit), and for an automatic
    # release how many tests failing it were left out.
    audit = models.JSONField(default=dict, blank=True)
    licence = models.CharField(max_length=100, default="CC-BY-4.0")
    # What content_hash covers (release_verify): "stored", every stored value as release_create
    # writes it (test_hash_line, then each batch's records); "rows", the whole rows' canonical JSON,
    # then the records, per batch: the hash published with releases frozen before storage format 2
    # (migration 0012 rewrote them and kept it).
    hash_scheme = models.CharField(max_length=8, default="stored", choices=[
        ("stored", "Every stored value (releases frozen in format 2)"),
        ("rows", "Whole rows, then records (releases frozen in format 1)")])

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name", "version"], name="release_unique_version"),
            models.CheckConstraint(condition=Q(kind__in=ReleaseKind.values), name="release_kind_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"


# UNCHECKED_RELEASE_FK: a release's rows are written only by release_create, in the transaction
# that creates the release row, so a database foreign key could never fail there; checking it
# (deferred, at commit, one lookup per row) took 0.35-0.6 s of an 80,000-test release on
# PostgreSQL. Deleting a release still deletes its rows (Django's on_delete=CASCADE).
class ReleaseTest(models.Model):
    """One test frozen into a release: the row's content is copied so later edits can't leak in."""

    # No index of its own: the unique (release, test_id) and the order index both start with it.
    # No database constraint either (see UNCHECKED_RELEASE_FK).
    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="entries", db_index=False,
                                db_constraint=False)
    test_id = models.PositiveBigIntegerField()
    conversation_id = models.PositiveBigIntegerField()
    position = models.PositiveIntegerField()
    # NULL: `data` is the whole row and `csv_line` the whole CSV record. Set (a slim row): `data`
    # lacks "intent", "procedure" and "apis", and `csv_line` the six cells from intent_id to apis;
    # both come back from the release's records (curation.releases.rows splices them in).
    procedure_id = models.PositiveBigIntegerField(null=True, blank=True)
    # Set: the context is the first `context_len` messages of the release's record of
    # the conversation, so `data` has no "context" and `csv_line` no context cell.
    context_len = models.PositiveIntegerField(null=True, blank=True)
    data = models.JSONField()
    # The test's ALMITA-style CSV record, rendered once when the release is made (releases never
    # change), so the CSV download streams stored text like the JSONL one instead of re-encoding.
    csv_line = models.TextField(blank=True, default="")
    # The test's Hugging Face tests.jsonl line, likewise (slim rows: without the procedure's
    # values and a named context; curation.releases.hf). Empty (the database default, so raw
    # inserts of the other columns still work): rendered at download.
    hf_line = models.TextField(blank=True, default="", db_default="")

    class Meta:
        ordering = ["conversation_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["release", "test_id"], name="releasetest_unique"),
        ]
        # Downloads and release_verify read a release in this order; without the index the
        # database sorts every (~4 KB) row first, which dominated a million-test download.
        indexes = [
            models.Index(fields=["release", "conversation_id", "position", "id"], name="releasetest_order"),
        ]


class ReleaseRecord(models.Model):
    """A supporting object frozen into a release (intent, procedure with APIs, graph, path,
    conversation), in the import format's record shape, so the JSONL export of a release never
    reads live rows."""

    # No index of its own: the unique (release, kind, object_id) starts with it; no database
    # constraint (see UNCHECKED_RELEASE_FK).
    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="records", db_index=False,
                                db_constraint=False)
    kind = models.CharField(max_length=32)
    object_id = models.PositiveBigIntegerField()
    data = models.JSONField()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["release", "kind", "object_id"], name="releaserecord_unique"),
        ]

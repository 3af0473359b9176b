"""Blind double review, adjudication, the audit log, and immutable releases.

A ReviewItem stands for one reviewable artifact (procedure with its APIs, flowgraph,
conversation graph or conversation), so the queue, reviews and resolutions work the same way
for every stage.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


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
        ]

    def __str__(self) -> str:
        return f"{self.get_stage_display()} #{self.object_id}"

    @property
    def is_decided(self) -> bool:
        return self.state == ItemState.DECIDED


class Claim(models.Model):
    """An annotator holds an item until they submit, skip, or the claim expires."""

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
    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="skips")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="skips")
    reason = models.CharField(max_length=300)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"], name="skip_unique_item_annotator"),
        ]


class Review(models.Model):
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
        from curation.services import reviews_visible_to

        return not reviews_visible_to(user).filter(pk=self.pk).exists()


class Resolution(models.Model):
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
    class Action(models.TextChoices):
        CLAIM = "claim", "Claim"
        SKIP = "skip", "Skip"
        VERDICT = "verdict", "Verdict"
        UNDO = "undo", "Undo"
        RESOLVE = "resolve", "Resolution"
        CASCADE = "cascade", "Cascade"
        EXCLUDE = "exclude", "Excluded by a rejected ancestor"
        RESTORE = "restore", "Restored (ancestor no longer rejected)"

    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    action = models.CharField(max_length=16, choices=Action.choices)
    item = models.ForeignKey(ReviewItem, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit")
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-at", "-id"]


class ReleaseKind(models.TextChoices):
    CURATED = "curated", "Curated (accepted items)"
    AUTOMATIC = "automatic", "Automatic (passed automatic filters)"


class Release(models.Model):
    """An immutable snapshot of a curated (or automatic) dataset."""

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
    licence = models.CharField(max_length=100, default="CC-BY-4.0")
    # How the rows are stored (curation.release_rows): 1, every ReleaseTest row self-contained
    # (releases made before format 2, and rows built by hand); 2, release_create's slim rows that
    # name their procedure, whose intent, text and APIs the release's records hold once.
    format = models.PositiveSmallIntegerField(default=1)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="release_unique_version"),
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
    # NULL: `data` is the whole row and `csv_line` the whole CSV record. Set (format 2): `data`
    # lacks "intent", "procedure" and "apis", and `csv_line` the six cells from intent_id to apis;
    # both come back from the release's records (curation.release_rows splices them in).
    procedure_id = models.PositiveBigIntegerField(null=True, blank=True)
    # Set (format 2): the context is the first `context_len` messages of the release's record of
    # the conversation, so `data` has no "context" and `csv_line` no context cell.
    context_len = models.PositiveIntegerField(null=True, blank=True)
    data = models.JSONField()
    # The test's ALMITA-style CSV record, rendered once when the release is made (releases never
    # change), so the CSV download streams stored text like the JSONL one instead of re-encoding.
    csv_line = models.TextField(blank=True, default="")

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


# Issue #16's rows live in their own module; importing it here registers them with the app.
from curation.annotation_models import (  # noqa: E402,F401
    Flag,
    FlagKind,
    GoldItem,
    GoldOrigin,
    GuidelineVersion,
    ReviewMeta,
)

"""Jobs and their bookkeeping: status moves, per-stage progress, discards, LLM calls, item claims.

A job's rows of work (artifacts) are in models/artifacts.py; this module is what runs them.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from projects.scoping import ProjectManager, project_field


class Origin(models.TextChoices):
    GENERATED = "generated", "Generated"
    IMPORTED = "imported", "Imported"
    DERIVED = "derived", "Derived"


class CurationStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    ACCEPTED = "accepted", "Accepted"
    REJECTED = "rejected", "Rejected"
    EXCLUDED = "excluded", "Excluded (ancestor rejected)"


class Stage(models.TextChoices):
    INTENTS = "intents", "Intents"
    PROCEDURES = "procedures", "Procedures"
    APIS = "apis", "APIs"
    FLOWGRAPH = "flowgraph", "Flowgraphs"
    CONVERSATION_GRAPH = "conversation_graph", "Conversation graphs"
    NOISE = "noise", "Noise"
    PATHS = "paths", "Sampled paths"
    CONVERSATIONS = "conversations", "Conversations"
    TESTS = "tests", "Tests"


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    CANCELLING = "cancelling", "Cancelling"
    CANCELLED = "cancelled", "Cancelled"
    FAILED = "failed", "Failed"
    SUCCEEDED = "succeeded", "Succeeded"


# The one table of legal status moves; anything else raises IllegalTransition.
JOB_TRANSITIONS: dict[str, frozenset[str]] = {
    JobStatus.QUEUED: frozenset({JobStatus.RUNNING, JobStatus.CANCELLED, JobStatus.FAILED}),
    JobStatus.RUNNING: frozenset({JobStatus.CANCELLING, JobStatus.FAILED, JobStatus.SUCCEEDED}),
    JobStatus.CANCELLING: frozenset({JobStatus.CANCELLED, JobStatus.FAILED}),
    JobStatus.CANCELLED: frozenset(),
    JobStatus.FAILED: frozenset(),
    JobStatus.SUCCEEDED: frozenset(),
}
TERMINAL_JOB_STATUSES = frozenset(s for s, nxt in JOB_TRANSITIONS.items() if not nxt)


class IllegalTransition(Exception):
    pass


class GenerationJob(models.Model):
    project = project_field()
    objects = ProjectManager()
    name = models.CharField(max_length=200, blank=True)
    config = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    # Per-stage counters: {stage: {"generated": n, "passed": n, "discarded": {reason: n}}}.
    counters = models.JSONField(default=dict, blank=True)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Last time a worker finished an item or moved the job; the watchdog reads it (JOB_STALL_MINUTES).
    progress_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=JobStatus.values), name="job_status_valid"),
            # A job has a finish time exactly when it is in a terminal state.
            models.CheckConstraint(
                condition=(
                    Q(status__in=sorted(TERMINAL_JOB_STATUSES), finished_at__isnull=False)
                    | (~Q(status__in=sorted(TERMINAL_JOB_STATUSES)) & Q(finished_at__isnull=True))
                ),
                name="job_finished_iff_terminal",
            ),
        ]

    def __str__(self) -> str:
        return self.name or f"Job {self.pk}"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_JOB_STATUSES

    def can_transition(self, to: str) -> bool:
        return to in JOB_TRANSITIONS[self.status]

    def transition(self, to: str, *, error: str = "") -> None:
        """Move to `to` in memory (caller saves) or raise IllegalTransition."""
        if not self.can_transition(to):
            raise IllegalTransition(f"job {self.pk}: {self.status} → {to} is not allowed")
        now = timezone.now()
        if to == JobStatus.RUNNING and self.started_at is None:
            self.started_at = now
        if to in TERMINAL_JOB_STATUSES:
            self.finished_at = now
        if error:
            self.error = error
        self.status = to
        self.progress_at = now


class StageState(models.TextChoices):
    WAITING = "waiting", "Waiting"
    PLANNING = "planning", "Planning"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    SKIPPED = "skipped", "Skipped"


class StageProgress(models.Model):
    """Live progress of one stage of one job; the source of truth for fan-out and completion.

    `total` is the number of work items (one task each) and `items` maps each finished item's
    key to its outcome, written in the same transaction as the item's results, so a task that
    runs twice finds its key and writes nothing. `generated`/`passed`/`discarded` count the
    stage's units (the columns of the paper's Table 1), which may differ from work items (one
    A.1 call yields many intents; one path-sampling item yields M paths).
    """

    State = StageState

    job = models.ForeignKey(GenerationJob, on_delete=models.CASCADE, related_name="progress")
    stage = models.CharField(max_length=32, choices=Stage.choices)
    state = models.CharField(max_length=16, choices=StageState.choices, default=StageState.WAITING)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    generated = models.PositiveIntegerField(default=0)
    passed = models.PositiveIntegerField(default=0)
    discarded = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    imported = models.PositiveIntegerField(default=0)
    # Units that passed only after a repair turn (the reply first failed parsing or validation).
    repaired = models.PositiveIntegerField(default=0)
    # Units that passed only in a fresh conversation started after the repairs were spent (llm.repair.ask).
    resampled = models.PositiveIntegerField(default=0)
    # Shortfalls that are not discards, by reason: {"fewer_distinct_paths": n, "duplicate_test": n}.
    notes = models.JSONField(default=dict, blank=True)
    items = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "stage progress"
        verbose_name_plural = "stage progress"  # not Django's "stage progresss"
        constraints = [
            models.UniqueConstraint(fields=["job", "stage"], name="progress_unique_job_stage"),
            models.CheckConstraint(condition=Q(stage__in=Stage.values), name="progress_stage_valid"),
            models.CheckConstraint(condition=Q(state__in=StageState.values), name="progress_state_valid"),
            models.CheckConstraint(condition=Q(done__lte=models.F("total")) | Q(total=0),
                                   name="progress_done_le_total"),
        ]

    @property
    def percent(self) -> int:
        if self.state in (StageState.DONE, StageState.SKIPPED):
            return 100
        return int(100 * self.done / self.total) if self.total else 0


class Discard(models.Model):
    """An item that an automatic filter threw away, with the reason (paper Table 1 rows)."""

    job = models.ForeignKey(GenerationJob, on_delete=models.CASCADE, related_name="discards")
    stage = models.CharField(max_length=32, choices=Stage.choices)
    key = models.CharField(max_length=200)
    reason = models.CharField(max_length=100)
    detail = models.TextField(blank=True)
    example = models.TextField(blank=True, help_text="The offending output, truncated")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["job", "stage", "key"], name="discard_unique_job_stage_key"),
        ]


class LLMOutcome(models.TextChoices):
    IN_FLIGHT = "in_flight", "Sent, no reply yet"
    OK = "ok", "OK"
    INVALID = "invalid", "Replied, failed parsing or validation"
    CACHED = "cached", "Cache hit"
    RETRIED = "retried", "Transient error, retried"
    ERROR = "error", "Failed"
    LOST = "lost_in_flight", "Lost in flight (worker died)"


class OutputForm(models.TextChoices):
    TEXT = "text", "Free text"
    JSON = "json", "JSON by the prompt"
    SCHEMA = "schema", "JSON Schema (structured outputs)"


class LLMCall(models.Model):
    Outcome = LLMOutcome

    job = models.ForeignKey(GenerationJob, null=True, blank=True, on_delete=models.CASCADE, related_name="llm_calls")
    stage = models.CharField(max_length=32)
    key = models.CharField(max_length=200, blank=True)
    attempt = models.PositiveSmallIntegerField(default=1)
    # 0 for the first question, n for the n-th repair turn of the same conversation.
    repair = models.PositiveSmallIntegerField(default=0)
    # Which of n samples of the same prompt this is (part of the cache key when temperature > 0).
    sample = models.PositiveIntegerField(default=0)
    # 1 for a fresh conversation started after the item's repairs were spent (llm.repair.ask).
    resample = models.PositiveSmallIntegerField(default=0)
    model = models.CharField(max_length=200)
    template = models.CharField(max_length=100, blank=True)
    template_version = models.CharField(max_length=20, blank=True)
    prompt_hash = models.CharField(max_length=64, db_index=True)
    request = models.JSONField(default=dict)
    response = models.TextField(blank=True)
    # [{"name": str, "arguments": str}] when the model answered with tool calls.
    tool_calls = models.JSONField(default=list, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    # The HTTP status of the reply (null: none came back, or a cache hit); 429s feed the rate panel.
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.OK)
    # The reply parsed and passed its stage's validators: only such rows are served from the cache.
    validated = models.BooleanField(default=False)
    # Validator rule ids when the outcome is invalid.
    rules = models.JSONField(default=list, blank=True)
    # prompt_tokens is an estimate from the text (no reply with usage came back).
    tokens_estimated = models.BooleanField(default=False)
    # "host:pid" of the process that sent it, to tell orphaned in-flight rows after a crash.
    worker = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    # How the reply's format was asked for: free text, JSON by the prompt (json_object), or the
    # stage's JSON Schema as a structured-output response_format (#32).
    output_form = models.CharField(max_length=8, choices=OutputForm.choices, default=OutputForm.TEXT)
    # The Batch API batch that carried this request (None: sent online).
    batch = models.ForeignKey("generation.LLMBatch", null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="calls")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=Q(outcome__in=LLMOutcome.values), name="llmcall_outcome_valid"),
        ]
        indexes = [models.Index(fields=["outcome", "worker"], name="llmcall_outcome_worker")]

    def __str__(self) -> str:
        return f"{self.stage} {self.model} ({self.outcome})"


class ItemClaim(models.Model):
    """Which delivery of an item's task processes it: the one that inserted (or took over) this row.

    One row per (job, stage, key), so of two deliveries of the same item (a broker redelivery, a
    re-publishing after a crash, two worker processes) only one makes the item's LLM calls. `owner`
    is the worker's "host:pid" and `delivery` the task id; a claim whose owner died is taken over.
    """

    job = models.ForeignKey(GenerationJob, on_delete=models.CASCADE, related_name="+")
    stage = models.CharField(max_length=32)
    key = models.CharField(max_length=200)
    owner = models.CharField(max_length=200)
    delivery = models.CharField(max_length=64)
    claimed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "stage", "key"], name="itemclaim_unique_job_stage_key"),
        ]


class WorkerHeartbeat(models.Model):
    """Written by a Celery worker when asked, so pages can say whether a worker is alive."""

    nonce = models.CharField(max_length=64, unique=True)
    hostname = models.CharField(max_length=200)
    pid = models.PositiveIntegerField()
    broker = models.CharField(max_length=32)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

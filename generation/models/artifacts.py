"""Pipeline artifacts (paper Figure 1), with their lineage, origin, job and curation status.

`key` makes writes idempotent: a job writes each artifact under a key built from (stage, index),
so a task that runs twice overwrites instead of duplicating; an imported artifact is keyed by the
importer's identity for it, so re-importing creates nothing new.
"""
from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from projects.scoping import ProjectManager, project_field

from generation.models.jobs import CurationStatus, GenerationJob, Origin


class Artifact(models.Model):
    """Fields every pipeline artifact shares. `project` is its job's or import's project."""

    project = project_field()
    objects = ProjectManager()

    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.GENERATED)
    job = models.ForeignKey(GenerationJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    key = models.CharField(max_length=200, blank=True, default="")
    status = models.CharField(max_length=16, choices=CurationStatus.choices, default=CurationStatus.PENDING)
    # Automatic validator findings kept as warnings: [{"rule", "where", "message", "severity"}].
    validation = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=Q(origin__in=Origin.values), name="%(app_label)s_%(class)s_origin_valid"),
            models.CheckConstraint(
                condition=Q(status__in=CurationStatus.values), name="%(app_label)s_%(class)s_status_valid"
            ),
            models.UniqueConstraint(
                fields=["job", "key"],
                condition=Q(job__isnull=False) & ~Q(key=""),
                name="%(app_label)s_%(class)s_unique_job_key",
            ),
            models.UniqueConstraint(
                fields=["project", "key"],
                condition=Q(job__isnull=True) & ~Q(key=""),
                name="%(app_label)s_%(class)s_unique_import_key",
            ),
        ]


class Intent(Artifact):
    client = models.CharField(max_length=200)
    issue = models.TextField()
    name = models.CharField(max_length=200)

    class Meta(Artifact.Meta):
        pass

    def __str__(self) -> str:
        return f"{self.name} ({self.client})"


class Procedure(Artifact):
    intent = models.ForeignKey(Intent, on_delete=models.CASCADE, related_name="procedures")
    title = models.CharField(max_length=300, blank=True)
    text = models.TextField()
    # Multi-API generation: the API chain the procedure was seeded from (generation/multi_api.py).
    api_chain = models.JSONField(default=dict, blank=True)

    class Meta(Artifact.Meta):
        pass

    def __str__(self) -> str:
        return self.title or f"Procedure {self.pk} for {self.intent.name}"


class Api(Artifact):
    procedure = models.ForeignKey(Procedure, on_delete=models.CASCADE, related_name="apis")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    # [{"name": str, "type": str, "required": bool, "description": str}]
    parameters = models.JSONField(default=list, blank=True)
    output_name = models.CharField(max_length=200, default="result")
    output_type = models.CharField(max_length=200, default="dict")
    # Declared output fields, same shape as parameters (+ nested "properties"); empty when only
    # output_name/output_type are known.
    outputs = models.JSONField(default=list, blank=True)

    class Meta(Artifact.Meta):
        constraints = Artifact.Meta.constraints + [
            models.UniqueConstraint(fields=["procedure", "name"], name="api_unique_name_per_procedure"),
        ]

    def __str__(self) -> str:
        return self.name


class Flowgraph(Artifact):
    procedure = models.ForeignKey(Procedure, on_delete=models.CASCADE, related_name="flowgraphs")
    # {"kind", "nodes": [...], "edges": [...]} as written by generation.pipeline.formats.graph_to_json
    data = models.JSONField(default=dict)
    text = models.TextField(blank=True, help_text="The bracket-format text the graph was parsed from")
    svg = models.TextField(blank=True, editable=False)

    class Meta(Artifact.Meta):
        pass

    def __str__(self) -> str:
        return f"Flowgraph {self.pk}"


class ConversationGraph(Artifact):
    class Mode(models.TextChoices):
        DETERMINISTIC = "deterministic", "Deterministic converter"
        LLM = "llm", "LLM (prompt A.5)"

    flowgraph = models.ForeignKey(Flowgraph, on_delete=models.CASCADE, related_name="conversation_graphs")
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.DETERMINISTIC)
    data = models.JSONField(default=dict)
    text = models.TextField(blank=True)
    noise_rate = models.FloatField(default=0.0)
    # Kinds of the noise nodes in `data` (each noise node carries its own kind too).
    noise_kinds = models.JSONField(default=list, blank=True)
    svg = models.TextField(blank=True, editable=False)

    class Meta(Artifact.Meta):
        constraints = Artifact.Meta.constraints + [
            models.CheckConstraint(condition=Q(noise_rate__gte=0) & Q(noise_rate__lte=1), name="cg_noise_rate_range"),
        ]

    def __str__(self) -> str:
        return f"Conversation graph {self.pk}"


class SampledPath(Artifact):
    conversation_graph = models.ForeignKey(ConversationGraph, on_delete=models.CASCADE, related_name="paths")
    node_ids = models.JSONField(default=list)
    sampler = models.CharField(max_length=32, default="algorithm1")
    seed = models.BigIntegerField(default=0)
    index = models.PositiveIntegerField(default=0)

    class Meta(Artifact.Meta):
        pass

    def __str__(self) -> str:
        return f"Path {self.pk}: {' → '.join(self.node_ids)}"


class MessageRole(models.TextChoices):
    USER = "user", "User"
    ASSISTANT = "assistant", "Assistant"
    API = "api", "API call"
    API_OUTPUT = "api_output", "API output"


class Conversation(Artifact):
    class Mode(models.TextChoices):
        OFFLINE = "offline", "Offline realisation"
        LLM = "llm", "LLM (prompt A.6)"
        PROCEDURE = "procedure", "LLM from procedure (A.7 ablation)"

    path = models.ForeignKey(SampledPath, null=True, blank=True, on_delete=models.CASCADE, related_name="conversations")
    # A.7 conversations come straight from a procedure, without a graph or path.
    procedure = models.ForeignKey(Procedure, on_delete=models.CASCADE, related_name="conversations")
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.OFFLINE)
    # [{"role": "user"|"assistant"|"api"|"api_output", "content": str}]
    messages = models.JSONField(default=list)
    noise_kinds = models.JSONField(default=list, blank=True)
    # One ToolDial dialogue action per message (None for api_output): pipeline/dialogue_actions.py.
    turn_actions = models.JSONField(default=list, blank=True)

    class Meta(Artifact.Meta):
        pass

    def __str__(self) -> str:
        return f"Conversation {self.pk}"


class Test(Artifact):
    class ExpectedType(models.TextChoices):
        REPLY = "reply", "Reply"
        API_CALL = "api_call", "API call"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="tests")
    position = models.PositiveIntegerField(help_text="Index of the expected message in the conversation")
    context = models.JSONField(default=list)
    expected_type = models.CharField(max_length=16, choices=ExpectedType.choices)
    expected_text = models.TextField(blank=True)
    expected_api_name = models.CharField(max_length=200, blank=True)
    expected_parameters = models.JSONField(default=dict, blank=True)
    # sha256 of (context, expected): a job never stores two tests with the same one.
    fingerprint = models.CharField(max_length=64, blank=True, default="")
    # The ToolDial dialogue action of the expected step (request, response, call, ...).
    action = models.CharField(max_length=32, blank=True)

    class Meta(Artifact.Meta):
        ordering = ["conversation_id", "position"]
        # A project's tests in id order (the API list, #30): by project_id alone Postgres walked
        # every project's tests by primary key (10 projects: 60 ms for a page, 10 ms with this).
        indexes = [models.Index(fields=["project", "id"], name="test_project_id_order")]
        constraints = Artifact.Meta.constraints + [
            models.UniqueConstraint(fields=["job", "fingerprint"], condition=Q(job__isnull=False) & ~Q(fingerprint=""),
                                    name="test_unique_job_fingerprint"),
            models.UniqueConstraint(fields=["conversation", "position"], name="test_unique_position"),
            models.CheckConstraint(
                condition=(
                    Q(expected_type="reply", expected_api_name="")
                    | (Q(expected_type="api_call") & ~Q(expected_api_name=""))
                ),
                name="test_expected_shape",
            ),
        ]

    def __str__(self) -> str:
        return f"Test {self.pk} (conversation {self.conversation_id} @ {self.position})"

    @property
    def expected(self) -> dict:
        if self.expected_type == self.ExpectedType.API_CALL:
            return {"type": "api_call", "name": self.expected_api_name, "parameters": self.expected_parameters}
        return {"type": "reply", "content": self.expected_text}


class GapFill(models.Model):
    """Lineage of gap filling (i15): one path a gap-filling job planned for a conversation graph,
    the uncovered edges it was sampled to cover, and which attempt at those edges it is. The path
    row is the job's SampledPath with the same conversation graph and index."""

    job = models.ForeignKey(GenerationJob, on_delete=models.CASCADE, related_name="gap_fills")
    conversation_graph = models.ForeignKey(ConversationGraph, on_delete=models.CASCADE, related_name="gap_fills")
    index = models.PositiveIntegerField()
    node_ids = models.JSONField(default=list)
    edges = models.JSONField(default=list, help_text="The uncovered edges [source, target] this path fills")
    attempt = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["job", "conversation_graph", "index"], name="gapfill_unique_path"),
            models.CheckConstraint(condition=Q(attempt__gte=1), name="gapfill_attempt_positive"),
        ]

    @property
    def path(self) -> "SampledPath | None":
        return SampledPath.objects.filter(job=self.job, conversation_graph=self.conversation_graph,
                                          index=self.index).first()

"""Agents under test, evaluation runs on releases, and per-test results (paper §4.3)."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from curation.models import Release


class AgentMode(models.TextChoices):
    PROMPT = "prompt", "JSON answers (prompt A.8)"
    FUNCTIONS = "functions", "Native function calling (w/ F)"
    GOLD = "gold", "Reference: gold"
    ALWAYS_REPLY = "always_reply", "Reference: always reply"
    FIRST_API = "first_api", "Reference: always the first API"


class AgentKnowledge(models.TextChoices):
    PROCEDURE = "procedure", "Procedure text"
    MERMAID = "mermaid", "Workflow as Mermaid flowchart"
    CODE = "code", "Workflow as pseudo-code"


class Agent(models.Model):
    Mode = AgentMode
    Knowledge = AgentKnowledge

    name = models.CharField(max_length=200, unique=True)
    mode = models.CharField(max_length=16, choices=AgentMode.choices, default=AgentMode.PROMPT)
    knowledge = models.CharField(max_length=16, choices=AgentKnowledge.choices, default=AgentKnowledge.PROCEDURE)
    base_url = models.CharField(max_length=500, blank=True, help_text="Empty: OPENAI_BASE_URL")
    # The name of an environment variable holding the key: secrets never reach the database.
    api_key_env = models.CharField(max_length=100, blank=True, default="OPENAI_API_KEY")
    model = models.CharField(max_length=200, blank=True)
    temperature = models.FloatField(default=0.0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(mode__in=AgentMode.values), name="agent_mode_valid"),
            models.CheckConstraint(condition=Q(temperature__gte=0) & Q(temperature__lte=2), name="agent_temperature_range"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_reference(self) -> bool:
        return self.mode in {self.Mode.GOLD, self.Mode.ALWAYS_REPLY, self.Mode.FIRST_API}


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    CANCELLED = "cancelled", "Cancelled"
    FAILED = "failed", "Failed"
    SUCCEEDED = "succeeded", "Succeeded"


class EvaluationRun(models.Model):
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="runs")
    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="runs")
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    similarity = models.CharField(max_length=32, default="lexical", help_text="bertscore or lexical")
    threshold = models.FloatField(default=0.55)
    metrics = models.JSONField(default=dict, blank=True)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=RunStatus.values), name="run_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.agent} on {self.release}"


class TestResult(models.Model):
    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="results")
    entry = models.ForeignKey("curation.ReleaseTest", on_delete=models.PROTECT, related_name="results")
    raw_reply = models.TextField(blank=True)
    parsed = models.JSONField(default=dict, blank=True)
    predicted_type = models.CharField(max_length=16, blank=True)
    reply_recalled = models.BooleanField(default=False)
    reply_correct = models.BooleanField(default=False)
    api_recalled = models.BooleanField(default=False)
    api_correct = models.BooleanField(default=False)
    params_correct = models.BooleanField(default=False)
    correct = models.BooleanField(default=False)
    similarity = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "entry"], name="testresult_unique_run_entry"),
        ]

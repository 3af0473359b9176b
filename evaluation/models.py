"""Agents under test, evaluation runs on releases, and per-test results (paper §4.3)."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from projects.scoping import ProjectManager, owner_scoped_manager, project_field

from curation.models import Release


class AgentMode(models.TextChoices):
    PROMPT = "prompt", "JSON answers (prompt A.8)"
    FUNCTIONS = "functions", "Native function calling (w/ F)"
    GOLD = "gold", "Reference: gold"
    ALWAYS_REPLY = "always_reply", "Reference: always reply"
    FIRST_API = "first_api", "Reference: always the first API"
    # Issue #18: your own agent. HTTP: the almita-agent/1 protocol at `base_url`. OWN_PROMPT: an
    # OpenAI-compatible model with only its own `system_prompt`, the conversation and the tools.
    HTTP = "http", "HTTP agent (almita-agent/1 protocol)"
    OWN_PROMPT = "own_prompt", "LLM with its own system prompt"


class AgentKnowledge(models.TextChoices):
    PROCEDURE = "procedure", "Procedure text"
    MERMAID = "mermaid", "Workflow as Mermaid flowchart"
    CODE = "code", "Workflow as pseudo-code"


class Agent(models.Model):
    Mode = AgentMode
    Knowledge = AgentKnowledge

    project = project_field()
    objects = ProjectManager()
    name = models.CharField(max_length=200)
    mode = models.CharField(max_length=16, choices=AgentMode.choices, default=AgentMode.PROMPT)
    knowledge = models.CharField(max_length=16, choices=AgentKnowledge.choices, default=AgentKnowledge.PROCEDURE)
    base_url = models.CharField(max_length=500, blank=True, help_text="Empty: OPENAI_BASE_URL")
    # The name of an environment variable holding the key: secrets never reach the database.
    api_key_env = models.CharField(max_length=100, blank=True, default="OPENAI_API_KEY")
    model = models.CharField(max_length=200, blank=True)
    temperature = models.FloatField(default=0.0)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Issue #18 (HTTP and own-prompt agents; see evaluation/agent_kinds.py).
    system_prompt = models.TextField(blank=True, help_text="own-prompt agents: the agent's own system prompt")
    auth_header = models.CharField(max_length=100, blank=True, default="Authorization",
                                   help_text="HTTP agents: the header carrying the secret named by api_key_env")
    # 20 s and one retry bound a hung agent to about 40 s per test (issue #27).
    timeout = models.FloatField(default=20.0, help_text="HTTP agents: seconds per request")
    retries = models.PositiveSmallIntegerField(default=1, help_text="HTTP agents: retries on 429/5xx/timeouts")
    max_concurrency = models.PositiveSmallIntegerField(default=8, help_text="HTTP agents: requests in flight at most")

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="agent_unique_name_per_project"),
            models.CheckConstraint(condition=Q(mode__in=AgentMode.values), name="agent_mode_valid"),
            models.CheckConstraint(condition=Q(knowledge__in=AgentKnowledge.values), name="agent_knowledge_valid"),
            models.CheckConstraint(condition=Q(temperature__gte=0) & Q(temperature__lte=2), name="agent_temperature_range"),
            models.CheckConstraint(condition=Q(timeout__gt=0) & Q(timeout__lte=600), name="agent_timeout_range"),
            models.CheckConstraint(condition=Q(retries__lte=10), name="agent_retries_range"),
            models.CheckConstraint(condition=Q(max_concurrency__gte=1) & Q(max_concurrency__lte=64),
                                   name="agent_max_concurrency_range"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_reference(self) -> bool:
        return self.mode in {self.Mode.GOLD, self.Mode.ALWAYS_REPLY, self.Mode.FIRST_API}

    @property
    def is_http(self) -> bool:
        return self.mode == self.Mode.HTTP


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    CANCELLED = "cancelled", "Cancelled"
    FAILED = "failed", "Failed"
    SUCCEEDED = "succeeded", "Succeeded"


# Allowed status moves; anything else raises. A failed or cancelled run can be resumed.
RUN_TRANSITIONS: dict[str, set[str]] = {
    RunStatus.QUEUED: {RunStatus.RUNNING, RunStatus.CANCELLED, RunStatus.FAILED},
    RunStatus.RUNNING: {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED},
    RunStatus.FAILED: {RunStatus.RUNNING},
    RunStatus.CANCELLED: {RunStatus.RUNNING},
    RunStatus.SUCCEEDED: set(),
}


class IllegalRunTransition(ValueError):
    pass


class RunBase(models.Model):
    """What turn-level and session runs share: the status machine, progress counters, the report
    (`metrics`) and who started it when."""

    Status = RunStatus

    project = project_field()
    objects = ProjectManager()
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    # How many tests or sessions are in flight at once (each lane is one Celery task looping).
    concurrency = models.PositiveSmallIntegerField(default=4)
    metrics = models.JSONField(default=dict, blank=True)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    def can_move_to(self, status: str) -> bool:
        return status in RUN_TRANSITIONS.get(self.status, set())

    def check_transition(self, status: str) -> None:
        if not self.can_move_to(status):
            raise IllegalRunTransition(f"{self._meta.verbose_name} {self.pk}: {self.status} -> {status} is not allowed")

    @property
    def is_active(self) -> bool:
        return self.status in (RunStatus.QUEUED, RunStatus.RUNNING)


class EvaluationRun(RunBase):
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="runs")
    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="runs")
    similarity = models.CharField(max_length=32, default="lexical", help_text="bertscore or lexical")
    threshold = models.FloatField(default=0.55)
    # A re-judged run copies another run's stored answers and scores them again (another
    # similarity or threshold) without asking the agent; its results are judged in batches.
    rejudged_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT,
                                      related_name="rejudgements")
    comparison = models.CharField(max_length=16, default="exact",
                                  help_text="exact (names exactly, values by JSON type and value) or lenient")
    trials = models.PositiveSmallIntegerField(default=1, help_text="answers asked per test (pass^k, pass@k)")
    dst = models.BooleanField(default=False, help_text="also ask the agent for the dialogue state at each test")
    # Issue #27: where the predicted dialogue action comes from (evaluation/dialogue_actions.py).
    action_labels = models.CharField(max_length=8, default="rules", help_text="rules: lexical rules on the "
                                     "agent's answer; model: the agent's model is asked for the label (ToolDial)")
    # Issue #27: above this share of tests without a readable answer (outages and unreadable
    # answers) the run ends failed: its figures would measure the connection, not the agent.
    max_error_share = models.FloatField(default=0.10, help_text="the run fails when more of its tests than this "
                                        "share got no answer or an unreadable one")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=RunStatus.values), name="run_status_valid"),
            models.CheckConstraint(condition=Q(max_error_share__gte=0) & Q(max_error_share__lte=1),
                                   name="run_max_error_share_range"),
            models.CheckConstraint(condition=Q(similarity__in=["bertscore", "lexical"]), name="run_similarity_valid"),
            models.CheckConstraint(condition=Q(comparison__in=["exact", "lenient"]), name="run_comparison_valid"),
            models.CheckConstraint(condition=Q(action_labels__in=["rules", "model"]), name="run_action_labels_valid"),
            models.CheckConstraint(condition=Q(trials__gte=1), name="run_trials_positive"),
            models.CheckConstraint(condition=Q(concurrency__gte=1), name="run_concurrency_positive"),
            models.CheckConstraint(condition=Q(done__lte=models.F("total")), name="run_done_le_total"),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.agent} on {self.release}"

    @property
    def is_rejudgement(self) -> bool:
        return self.rejudged_from_id is not None


class ResultState(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Call failed"


class TestResult(models.Model):
    """One row per (run, test), created pending when the run is created; a lane claims it with a
    conditional update, so a rerun overwrites instead of duplicating."""
    objects = owner_scoped_manager("run__project_id")

    State = ResultState

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="results")
    entry = models.ForeignKey("curation.ReleaseTest", on_delete=models.PROTECT, related_name="results")
    trial = models.PositiveSmallIntegerField(default=0, help_text="0-based repetition of the test in this run")
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
    predicted_action = models.CharField(max_length=32, blank=True, help_text="dialogue action of the answer")
    predicted_state = models.JSONField(null=True, blank=True, help_text="DST mode: the state the agent gave")
    error = models.TextField(blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    state = models.CharField(max_length=16, choices=ResultState.choices, default=ResultState.PENDING)
    claimed_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    llm_call = models.ForeignKey("generation.LLMCall", null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "entry", "trial"], name="testresult_unique_run_entry_trial"),
            models.CheckConstraint(condition=Q(state__in=ResultState.values), name="testresult_state_valid"),
            # A test is correct only if the agent recalled the expected kind of action.
            models.CheckConstraint(condition=Q(correct=False) | Q(reply_correct=True) | Q(params_correct=True),
                                   name="testresult_correct_needs_a_correct_part"),
        ]
        indexes = [models.Index(fields=["run", "state"])]


class SessionRun(RunBase):
    """An agent talking with a simulated user, one session per conversation of a release, judged
    by an LLM (FlowBench's simulated session-level evaluation)."""

    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="session_runs")
    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="session_runs")
    max_turns = models.PositiveSmallIntegerField(default=15, help_text="user turns before a session counts as failed")
    user_model = models.CharField(max_length=200, blank=True, help_text="Empty: EVALUATION_MODEL")
    judge_model = models.CharField(max_length=200, blank=True, help_text="Empty: EVALUATION_MODEL")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=RunStatus.values), name="sessionrun_status_valid"),
            models.CheckConstraint(condition=Q(concurrency__gte=1), name="sessionrun_concurrency_positive"),
            models.CheckConstraint(condition=Q(max_turns__gte=1) & Q(max_turns__lte=50), name="sessionrun_max_turns_range"),
            models.CheckConstraint(condition=Q(done__lte=models.F("total")), name="sessionrun_done_le_total"),
        ]

    def __str__(self) -> str:
        return f"sessions #{self.pk} {self.agent} on {self.release}"


class SessionResult(models.Model):
    """One simulated session: created pending; a lane claims it with a conditional update."""
    objects = owner_scoped_manager("run__project_id")

    State = ResultState

    run = models.ForeignKey(SessionRun, on_delete=models.CASCADE, related_name="results")
    conversation_id = models.PositiveIntegerField()
    task = models.JSONField(default=dict, blank=True)
    transcript = models.JSONField(default=list, blank=True)
    predicted_calls = models.JSONField(default=list, blank=True)
    success = models.BooleanField(default=False)
    total_goals = models.PositiveSmallIntegerField(default=0)
    accomplished = models.PositiveSmallIntegerField(default=0)
    turns = models.PositiveSmallIntegerField(default=0)
    tools = models.JSONField(default=dict, blank=True)
    ended_by = models.CharField(max_length=200, blank=True)
    judge_reason = models.TextField(blank=True)
    judge_raw = models.TextField(blank=True)
    notes = models.JSONField(default=list, blank=True, help_text="unparseable agent answers, with reasons")
    error = models.TextField(blank=True)
    state = models.CharField(max_length=16, choices=ResultState.choices, default=ResultState.PENDING)
    claimed_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["conversation_id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "conversation_id"], name="sessionresult_unique_run_conversation"),
            models.CheckConstraint(condition=Q(state__in=ResultState.values), name="sessionresult_state_valid"),
            models.CheckConstraint(condition=Q(accomplished__lte=models.F("total_goals")),
                                   name="sessionresult_accomplished_le_goals"),
        ]
        indexes = [models.Index(fields=["run", "state"])]

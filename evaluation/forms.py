from __future__ import annotations

from django import forms

from almita_web.bounds import BoundedModelChoiceField, BoundedModelMultipleChoiceField
from curation.models import Release
from evaluation import similarity as S
from evaluation.models import Agent, AgentKnowledge, AgentMode, EvaluationRun
from evaluation import metrics as M
from evaluation.metrics import METRICS


class AgentForm(forms.Form):
    name = forms.CharField(max_length=200)
    mode = forms.ChoiceField(choices=[(AgentMode.PROMPT.value, AgentMode.PROMPT.label),
                                      (AgentMode.FUNCTIONS.value, AgentMode.FUNCTIONS.label)])
    knowledge = forms.ChoiceField(choices=AgentKnowledge.choices, initial=AgentKnowledge.PROCEDURE)
    model = forms.CharField(max_length=200, required=False, help_text="Empty: EVALUATION_MODEL")
    temperature = forms.FloatField(min_value=0.0, max_value=2.0, initial=0.0)
    base_url = forms.CharField(max_length=500, required=False, label="Base URL",
                               help_text="Empty: OPENAI_BASE_URL")
    api_key_env = forms.RegexField(regex=r"^[A-Z][A-Z0-9_]*_API_KEY$", max_length=100, required=False,
                                   initial="OPENAI_API_KEY", label="API key variable",
                                   error_messages={"invalid": "Give the NAME of an environment variable "
                                                              "ending in _API_KEY, not a key."},
                                   help_text="The NAME of the environment variable that holds the key "
                                             "(…_API_KEY); the key itself is never stored. OPENAI_API_KEY is "
                                             "only sent to the default endpoint.")
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if Agent.objects.filter(name=name).exists():
            raise forms.ValidationError("An agent with this name exists.")
        return name


class SimilarityForm(forms.Form):
    """The reply similarity and threshold, shared by the run and re-judge forms."""

    similarity = forms.ChoiceField(choices=[(S.AUTO, "Automatic (BERTScore when installed)"),
                                            (S.BERTSCORE, "BERTScore F1"), (S.LEXICAL, "Lexical F1")],
                                   initial=S.AUTO)
    threshold = forms.FloatField(min_value=0.0, max_value=1.0, required=False,
                                 help_text="Empty: BERTSCORE_THRESHOLD (0.55 in the paper)")

    def clean_similarity(self) -> str:
        value = self.cleaned_data["similarity"]
        if value == S.BERTSCORE and not S.bertscore_available():
            raise forms.ValidationError("BERTScore needs the ML extra (requirements/ml.lock, see the README).")
        return value


class RunForm(SimilarityForm):
    agent = BoundedModelChoiceField(queryset=Agent.objects.all())
    release = BoundedModelChoiceField(queryset=Release.objects.all())
    concurrency = forms.IntegerField(min_value=1, max_value=64, required=False,
                                     help_text="Tests in flight at once. Empty: LLM_MAX_CONCURRENCY")
    comparison = forms.ChoiceField(choices=[(M.EXACT, "Exact (names exactly, values by JSON type and value)"),
                                            (M.LENIENT, "Lenient (case and spacing ignored)")],
                                   initial=M.EXACT, required=False, label="API comparison")
    trials = forms.IntegerField(min_value=1, max_value=20, initial=1, required=False,
                                help_text="Answers per test, for pass^k (an LLM agent needs temperature > 0; "
                                          "an HTTP agent is sampled as it is)")
    dst = forms.BooleanField(required=False, label="Dialogue-state tracking",
                             help_text="Also ask the agent for the dialogue state at each test (one more call)")
    action_labels = forms.ChoiceField(choices=[("rules", "Rules on the agent's answer"),
                                               ("model", "Ask the agent's model (ToolDial; one more call per test)")],
                                      initial="rules", required=False, label="Action labels",
                                      help_text="Where the predicted dialogue action comes from")
    max_error_share = forms.FloatField(min_value=0.0, max_value=1.0, initial=0.1, required=False,
                                       label="Error share limit",
                                       help_text="The run fails when more of its tests than this share (0..1) got "
                                                 "no answer or an unreadable one")
    field_order = ["agent", "release", "similarity", "threshold", "comparison", "trials", "dst", "action_labels", "concurrency",
                   "max_error_share"]


class RejudgeForm(SimilarityForm):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["threshold"].help_text = "Empty: the run's own threshold"


class CompareForm(forms.Form):
    runs = BoundedModelMultipleChoiceField(queryset=EvaluationRun.objects.select_related("agent", "release"))


class DatasetCompareForm(forms.Form):
    release_a = BoundedModelChoiceField(queryset=Release.objects.all(), label="Release on the x axis")
    release_b = BoundedModelChoiceField(queryset=Release.objects.all(), label="Release on the y axis")
    metric = forms.ChoiceField(choices=METRICS, initial="test_correct")


class SessionRunForm(forms.Form):
    agent = BoundedModelChoiceField(queryset=Agent.objects.filter(mode__in=[AgentMode.PROMPT, AgentMode.FUNCTIONS,
                                                                     AgentMode.HTTP, AgentMode.OWN_PROMPT]),
                                   help_text="An LLM agent: reference agents answer single tests only")
    release = BoundedModelChoiceField(queryset=Release.objects.all())
    max_turns = forms.IntegerField(min_value=1, max_value=50, initial=15,
                                   help_text="User turns before a session counts as failed (FlowBench: 15)")
    limit = forms.IntegerField(min_value=1, max_value=1_000_000, required=False, label="Conversations",
                               help_text="The first N conversations of the release. Empty: all")
    concurrency = forms.IntegerField(min_value=1, max_value=64, required=False,
                                     help_text="Sessions in flight at once. Empty: LLM_MAX_CONCURRENCY")
    user_model = forms.CharField(max_length=200, required=False, label="Simulated user model",
                                 help_text="Empty: EVALUATION_MODEL")
    judge_model = forms.CharField(max_length=200, required=False, label="Judge model",
                                  help_text="Empty: EVALUATION_MODEL")

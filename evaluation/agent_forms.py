"""Forms for HTTP agents and own-prompt agents (issue #18)."""
from __future__ import annotations

from django import forms

from evaluation.models import Agent, AgentKnowledge

KEY_FIELD = dict(regex=r"^[A-Z][A-Z0-9_]*_API_KEY$", max_length=100, required=False,
                 error_messages={"invalid": "Give the NAME of an environment variable ending in _API_KEY, not a secret."})


class _Named(forms.Form):
    name = forms.CharField(max_length=200)

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if Agent.objects.filter(name=name).exists():
            raise forms.ValidationError("An agent with this name exists.")
        return name


class HttpAgentForm(_Named):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("auto_id", "http_%s")  # two forms on one page: distinct element ids
        super().__init__(*args, **kwargs)

    url = forms.URLField(max_length=500, label="Agent URL", assume_scheme="https",
                         help_text="Each test is POSTed here as JSON (docs/agent-protocol.md)")
    knowledge = forms.ChoiceField(choices=AgentKnowledge.choices, initial=AgentKnowledge.PROCEDURE,
                                  help_text="Sent in the request's knowledge field")
    api_key_env = forms.RegexField(label="Secret variable", help_text="The NAME of the environment variable (…_API_KEY) "
                                   "whose value is sent in the auth header; the secret itself is never stored",
                                   **KEY_FIELD)
    auth_header = forms.CharField(max_length=100, initial="Authorization", required=False,
                                  help_text="Authorization sends “Bearer SECRET”; any other header sends the secret as it is")
    timeout = forms.FloatField(min_value=0.1, max_value=600, initial=20.0, help_text="Seconds per request")
    retries = forms.IntegerField(min_value=0, max_value=10, initial=1, help_text="On HTTP 429/5xx and timeouts")
    max_concurrency = forms.IntegerField(min_value=1, max_value=64, initial=8, label="Concurrency cap",
                                         help_text="Requests in flight at most")
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)


class OwnPromptAgentForm(_Named):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("auto_id", "own_%s")
        super().__init__(*args, **kwargs)

    system_prompt = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}),
                                    help_text="Only this, the conversation and the tools are sent: no product prompt")
    model = forms.CharField(max_length=200, required=False, help_text="Empty: EVALUATION_MODEL")
    temperature = forms.FloatField(min_value=0.0, max_value=2.0, initial=0.0)
    base_url = forms.CharField(max_length=500, required=False, label="Base URL", help_text="Empty: OPENAI_BASE_URL")
    api_key_env = forms.RegexField(label="API key variable", initial="OPENAI_API_KEY", **KEY_FIELD)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)

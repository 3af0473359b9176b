"""The project settings form, the new-project form and the member form."""
from __future__ import annotations

from django import forms

from django.conf import settings

from projects.models import (REVIEW_STAGES, ROLE_CHOICES, SLUG_RE, Project, site_reviews_needed,
                             validate_key_env)

MODEL_STAGES = ("intents", "procedures", "apis", "flowgraph", "conversation_graph", "conversations")


def site_default_text() -> str:
    """The site's review default in words: "2", or "2; conversation: 1" with REVIEWS_PER_STAGE."""
    per_stage = getattr(settings, "REVIEWS_PER_STAGE", {}) or {}
    extra = "; ".join(f"{s.replace('_', ' ')}: {n}" for s, n in sorted(per_stage.items()))
    return f"{site_reviews_needed()}{'; ' + extra if extra else ''}"


class SettingsForm(forms.Form):
    name = forms.CharField(max_length=200)
    reviews_per_item = forms.IntegerField(
        min_value=1, max_value=10, required=False, label="Reviews required per item",
        help_text="How many annotators review each item (overlap). A number here applies to every stage of "
                  "this project and wins over the site's defaults; empty: the site's default ({site}).")
    claim_minutes = forms.IntegerField(min_value=1, max_value=24 * 60, label="Claim expiry (minutes)")
    reviewed_stages = forms.MultipleChoiceField(
        choices=[(s, s.replace("_", " ")) for s in REVIEW_STAGES], required=False,
        widget=forms.CheckboxSelectMultiple, label="Stages reviewed",
        help_text="Artifacts of an unchecked stage get no review item and count as accepted: a curated release "
                  "takes a test when the reviewed stages above it accepted it (all tests, with no stage reviewed), "
                  "and its dataset card says which stages were not reviewed. Automatic releases ignore reviews.")
    default_instructions = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}),
                                           label="Default instructions for jobs")
    llm_base_url = forms.URLField(required=False, max_length=200, label="LLM endpoint (base URL)", assume_scheme="https",
                                  help_text="Empty: the site's OPENAI_BASE_URL.")
    llm_key_env = forms.CharField(required=False, max_length=100, validators=[validate_key_env],
                                  label="API key variable",
                                  help_text="The NAME of the environment variable holding the key; the key itself is never stored.")

    def __init__(self, *args, project: Project | None = None, **kwargs) -> None:
        if project is not None and "initial" not in kwargs:
            kwargs["initial"] = {
                "name": project.name, "reviews_per_item": project.reviews_per_item,
                "claim_minutes": project.claim_minutes, "reviewed_stages": project.reviewed_stages,
                "default_instructions": project.default_instructions, "llm_base_url": project.llm_base_url,
                "llm_key_env": project.llm_key_env,
                **{f"model_{s}": (project.default_models or {}).get(s, "") for s in MODEL_STAGES}}
        super().__init__(*args, **kwargs)
        field = self.fields["reviews_per_item"]
        field.help_text = field.help_text.format(site=site_default_text())
        field.widget.attrs["placeholder"] = str(site_reviews_needed())
        for stage in MODEL_STAGES:
            self.fields[f"model_{stage}"] = forms.CharField(
                required=False, max_length=200, label=f"Default model: {stage.replace('_', ' ')}")

    def values(self) -> dict:
        data = self.cleaned_data
        models = {s: data[f"model_{s}"].strip() for s in MODEL_STAGES if data.get(f"model_{s}", "").strip()}
        return {"name": data["name"].strip(), "reviews_per_item": data["reviews_per_item"],
                "claim_minutes": data["claim_minutes"], "reviewed_stages": list(data["reviewed_stages"]),
                "default_models": models, "default_instructions": data["default_instructions"],
                "llm_base_url": data["llm_base_url"], "llm_key_env": data["llm_key_env"].strip()}


class NewProjectForm(forms.Form):
    slug = forms.RegexField(regex=SLUG_RE, max_length=50, help_text="In the URL: /p/<slug>/ (a-z, 0-9, -).")
    name = forms.CharField(max_length=200)


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    roles = forms.MultipleChoiceField(choices=ROLE_CHOICES, required=False, widget=forms.CheckboxSelectMultiple,
                                      help_text="None: removes the user from the project.")

"""The job launch form: validation of the user's input only; the job rules live in services."""
from __future__ import annotations

import json
from decimal import Decimal

from django import forms

from generation.pipeline.sampling import SAMPLERS
from generation.services.config import BOUNDS, SEED_MAX, TEMPERATURE_MAX
from generation.stages import DEFAULT_TEMPERATURES

LLM_STAGES = ("intents", "procedures", "apis", "flowgraph", "conversation_graph", "conversations")
MAX_IMPORT_BYTES = 20 * 1024 * 1024
INSTRUCTIONS_MAX = 4000


class JobForm(forms.Form):
    name = forms.CharField(required=False, max_length=200)
    intents = forms.IntegerField(required=False, min_value=1, max_value=BOUNDS["intents"][1],
                                 help_text="How many intents to generate with prompt A.1.")
    seed_intents = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Or your own intents, one per line: client | issue | name.")
    import_file = forms.FileField(
        required=False, help_text="Or a JSON file of intents or procedures (optionally with APIs and flowgraphs).")
    existing = forms.ChoiceField(
        required=False, label="Or imported items",
        choices=[("", "—"), ("intents", "All imported intents"), ("procedures", "All imported procedures"),
                 ("apis", "All imported procedures with APIs"), ("flowgraph", "All imported flowgraphs")],
        help_text="Rows brought in on the import page that no job owns yet.")
    procedures_per_intent = forms.IntegerField(min_value=1, max_value=BOUNDS["procedures_per_intent"][1], initial=1)
    paths = forms.IntegerField(min_value=1, max_value=BOUNDS["paths"][1], initial=2, label="Paths per graph")
    sampler = forms.ChoiceField(choices=[(s, s) for s in SAMPLERS], initial="algorithm1")
    noise = forms.FloatField(min_value=0, max_value=1, initial=0.0, help_text="Probability per assistant node.")
    seed = forms.IntegerField(initial=0, min_value=0, max_value=SEED_MAX, help_text=f"0 to {SEED_MAX}.")
    cache = forms.BooleanField(
        required=False, initial=True, label="Use the response cache",
        help_text="Reuse validated replies to identical prompts; untick to call the endpoint for everything.")
    cost_limit = forms.DecimalField(
        required=False, min_value=Decimal("0.01"), max_value=Decimal(BOUNDS["cost_limit"][1]), decimal_places=2,
        label="Cost limit (USD)",
        help_text="Optional. Reaching it stops the job: failed with that reason, everything made so far kept.")
    api_chains = forms.IntegerField(
        required=False, min_value=1, max_value=200, label="API chains",
        help_text="Optional: seed the procedures from this many chains of connected APIs (ToolDial-style), "
                  "one chain per procedure in turn.")
    chain_length = forms.IntegerField(min_value=2, max_value=4, initial=2, required=False, label="APIs per chain")
    chain_apis_file = forms.FileField(
        required=False, label="APIs to chain",
        help_text="Optional JSON file of APIs (any shape the API graph page reads); default: every API in the database.")
    batch = forms.BooleanField(
        required=False, initial=False, label="Batch mode (Batch API, half the price)",
        help_text="Send the LLM stages through the endpoint's Batch API: half the price, results within its "
                  "window (up to 24 h); each repair goes in the next batch.")
    conversation_graph = forms.ChoiceField(
        choices=[("deterministic", "Deterministic converter"), ("llm", "LLM (prompt A.5)")], initial="deterministic")
    conversations = forms.ChoiceField(
        choices=[("offline", "Offline realisation"), ("llm", "LLM (prompt A.6)"),
                 ("procedure", "LLM from procedures (A.7 ablation)")], initial="offline")
    instructions = forms.CharField(
        required=False, max_length=INSTRUCTIONS_MAX, widget=forms.Textarea(attrs={"rows": 3}),
        label="Extra instructions",
        help_text="Appended to every LLM prompt of the job; prefilled with the project's default instructions.")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        from generation.inputs import existing_choice_labels
        from projects.context import current_project

        project = current_project()  # its settings page's defaults prefill the form
        own_models = (project.default_models or {}) if project is not None else {}
        if project is not None and project.default_instructions:
            self.fields["instructions"].initial = project.default_instructions[:INSTRUCTIONS_MAX]

        self.fields["existing"].choices = existing_choice_labels(self.fields["existing"].choices)
        from generation.llm.config import stage_model

        for stage in LLM_STAGES:
            # The project's default model for the stage (its settings page), else the site's.
            self.fields[f"model_{stage}"] = forms.CharField(
                required=False, max_length=200, label=f"Model: {stage.replace('_', ' ')}",
                initial=own_models.get(stage) or None,
                widget=forms.TextInput(attrs={"placeholder": stage_model(stage)}))
            self.fields[f"temperature_{stage}"] = forms.FloatField(
                required=False, min_value=0.0, max_value=TEMPERATURE_MAX,
                label=f"Temperature: {stage.replace('_', ' ')}",
                widget=forms.NumberInput(attrs={"step": "0.1", "placeholder": DEFAULT_TEMPERATURES.get(stage, 0.0)}))

    def model_fields(self):
        return [self[f"model_{s}"] for s in LLM_STAGES]

    def temperature_fields(self):
        return [self[f"temperature_{s}"] for s in LLM_STAGES]

    def _json_upload(self, field: str):
        f = self.cleaned_data.get(field)
        if not f:
            return None
        if f.size > MAX_IMPORT_BYTES:
            raise forms.ValidationError("The file is larger than 20 MB.")
        try:
            return json.loads(f.read().decode("utf-8-sig"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise forms.ValidationError(f"The file is not JSON: {exc}") from None

    def clean_import_file(self):
        return self._json_upload("import_file")

    def clean_chain_apis_file(self):
        return self._json_upload("chain_apis_file")

    def clean_seed_intents(self):
        text = self.cleaned_data.get("seed_intents", "").strip()
        if not text:
            return None
        intents = []
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            parts = [p.strip() for p in line.split("|")]
            if len(parts) != 3 or not all(parts):
                raise forms.ValidationError(f"Line {i}: write client | issue | name.")
            intents.append(dict(zip(("client", "issue", "name"), parts)))
        return {"intents": intents}

    def clean(self):
        data = super().clean()
        sources = [bool(data.get(k)) for k in ("intents", "seed_intents", "import_file", "existing")]
        if data.get("chain_apis_file") is not None and not data.get("api_chains"):
            self.add_error("api_chains", "Give the number of chains to use the API file.")
        if sum(sources) != 1:
            raise forms.ValidationError("Give exactly one of: a number of intents, your own intents, an import file, "
                                        "or imported items.")
        return data

    def job_arguments(self) -> dict:
        d = self.cleaned_data
        config = {k: d[k] for k in ("procedures_per_intent", "paths", "sampler", "noise", "seed",
                                    "conversation_graph", "conversations")}
        config["intents"] = d.get("intents") or 0
        config["models"] = {s: d[f"model_{s}"] for s in LLM_STAGES if d.get(f"model_{s}")}
        config["temperatures"] = {s: d[f"temperature_{s}"] for s in LLM_STAGES
                                  if d.get(f"temperature_{s}") is not None}
        config["cache"] = bool(d.get("cache"))
        if (d.get("instructions") or "").strip():
            config["instructions"] = d["instructions"].strip()
        if d.get("api_chains"):
            config["api_chains"] = {"count": d["api_chains"], "length": d.get("chain_length") or 2}
            if d.get("chain_apis_file") is not None:
                config["api_chains"]["apis"] = d["chain_apis_file"]
        if d.get("cost_limit") is not None:
            config["cost_limit"] = float(d["cost_limit"])
        config["batch"] = bool(d.get("batch"))
        return {"config": config, "name": d.get("name", ""),
                "import_data": d.get("seed_intents") or d.get("import_file"), "existing": d.get("existing") or None}


class CancelForm(forms.Form):
    """No fields: a POST with a CSRF token is the whole request."""

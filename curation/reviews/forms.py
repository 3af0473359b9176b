from __future__ import annotations

from django import forms

from curation.guidance.services import OTHER, SKIP_REASONS, reason_codes
from curation.models import Verdict


class ReviewForm(forms.Form):
    verdict = forms.ChoiceField(choices=Verdict.choices, widget=forms.RadioSelect)
    reason_codes = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), max_length=5000)
    # Flags on nodes, edges and turns as JSON (checked by curation.guidance.flags.clean_flags).
    flags = forms.CharField(required=False, max_length=400_000)

    def __init__(self, *args, stage: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["reason_codes"].choices = reason_codes(stage)

    def clean(self) -> dict:
        data = super().clean()
        codes = data.get("reason_codes") or []
        has_flags = (data.get("flags") or "").strip() not in ("", "[]")
        if data.get("verdict") == Verdict.REJECT and not codes and not has_flags:
            self.add_error("reason_codes", "A rejection needs at least one reason.")
        if OTHER in codes and not (data.get("comment") or "").strip():
            self.add_error("comment", "Reason OTHER needs a comment saying what is wrong.")
        return data


class SkipForm(forms.Form):
    reason = forms.ChoiceField(choices=SKIP_REASONS)
    detail = forms.CharField(required=False, max_length=200)

    def reason_text(self) -> str:
        text = self.cleaned_data["reason"]
        detail = (self.cleaned_data.get("detail") or "").strip()
        return f"{text}: {detail}" if detail else text


class ResolveForm(forms.Form):
    decision = forms.ChoiceField(choices=Verdict.choices, widget=forms.RadioSelect)
    note = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), max_length=5000)

    def clean_note(self) -> str:
        note = self.cleaned_data["note"].strip()
        if not note:
            raise forms.ValidationError("Write a note explaining the decision.")
        return note

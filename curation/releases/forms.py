from __future__ import annotations

from django import forms

from almita_web.bounds import MAX_ID, bounded_id
from curation.models import ReleaseKind, ReviewStage
from curation.releases.services import LICENCES


def _ids(text: str) -> list[int]:
    out = []
    for part in text.replace(",", " ").split():
        try:
            out.append(bounded_id(part) if part.isdigit() else bounded_id(None))
        except ValueError:
            raise forms.ValidationError(f"'{part[:40]}' is not an id (a whole number from 0 to {MAX_ID})") from None
    return out


class ReleaseForm(forms.Form):
    name = forms.CharField(max_length=200)
    kind = forms.ChoiceField(choices=ReleaseKind.choices, initial=ReleaseKind.CURATED)
    licence = forms.ChoiceField(choices=[(x, x) for x in LICENCES], initial="CC-BY-4.0")
    jobs = forms.CharField(required=False, help_text="Job ids, separated by spaces or commas (empty: all)")
    intents = forms.CharField(required=False, help_text="Intent ids (empty: all)")
    stages = forms.MultipleChoiceField(
        required=False, choices=ReviewStage.choices, widget=forms.CheckboxSelectMultiple,
        help_text="Curated releases: also require these review stages to have been accepted")
    noise_kinds = forms.CharField(required=False, help_text="Noise kinds to keep, 'none' for noise-free (empty: all)")

    def clean_jobs(self) -> list[int]:
        return _ids(self.cleaned_data["jobs"])

    def clean_intents(self) -> list[int]:
        return _ids(self.cleaned_data["intents"])

    def clean_noise_kinds(self) -> list[str]:
        return [k for k in self.cleaned_data["noise_kinds"].replace(",", " ").split() if k]

    def filters(self) -> dict:
        d = self.cleaned_data
        return {k: d[k] for k in ("jobs", "intents", "stages", "noise_kinds") if d.get(k)}

from __future__ import annotations

from django import forms

from webhooks.models import EVENTS


class WebhookForm(forms.Form):
    name = forms.CharField(max_length=200)
    url = forms.URLField(max_length=500, label="URL", assume_scheme="https")
    events = forms.MultipleChoiceField(choices=EVENTS, required=False, widget=forms.CheckboxSelectMultiple,
                                       help_text="None ticked: every event")
    secret = forms.CharField(required=False, min_length=16, max_length=200,
                             widget=forms.PasswordInput(render_value=False),
                             help_text="Empty: a strong secret is generated and shown once")

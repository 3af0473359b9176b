"""The admin's gold page: mark items gold, seed known-bad copies, see each annotator's accuracy."""
from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from almita_web.roles import ADMIN, role_required
from curation.guidance import gold
from curation.models import GoldItem, Review, ReviewStage, Verdict


class MarkForm(forms.Form):
    items = forms.CharField(max_length=2000, help_text="Review item ids, separated by commas or spaces")
    expected = forms.ChoiceField(choices=Verdict.choices)

    def clean_items(self) -> list[int]:
        raw = self.cleaned_data["items"].replace(",", " ").split()
        bad = [r for r in raw if not r.isdigit() or len(r) > 18]
        if bad or not raw:
            raise forms.ValidationError(f"Item ids are whole numbers; not {', '.join(bad[:3]) or 'empty'}.")
        return [int(r) for r in raw]


class SeedForm(forms.Form):
    stage = forms.ChoiceField(choices=[(s, dict(ReviewStage.choices)[s]) for s in gold.SEEDABLE])
    rate = forms.IntegerField(min_value=1, max_value=49, initial=5, help_text="Percent of the open queue")
    limit = forms.IntegerField(min_value=1, max_value=1000, initial=20)


@require_GET
@role_required(ADMIN)
def gold_page(request: HttpRequest) -> HttpResponse:
    items = list(GoldItem.objects.select_related("item", "source").order_by("-id")[:200])
    reviews: dict[int, list[Review]] = {}
    for r in Review.objects.filter(item__in=[g.item for g in items]).select_related("annotator"):
        reviews.setdefault(r.item_id, []).append(r)
    rows = [{"gold": g, "reviews": reviews.get(g.item_id, [])} for g in items]
    return render(request, "curation/gold.html", {
        "rows": rows, "mark_form": MarkForm(), "seed_form": SeedForm(), "accuracy": gold.gold_accuracy(),
    })


@require_POST
@role_required(ADMIN)
def gold_mark(request: HttpRequest) -> HttpResponse:
    form = MarkForm(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            for e in errors:
                messages.error(request, e)
        return redirect("curation:gold")
    try:
        n = gold.gold_mark(actor=request.user, item_ids=form.cleaned_data["items"],
                           expected=form.cleaned_data["expected"])
    except gold.GoldError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{n} item(s) marked gold.")
    return redirect("curation:gold")


@require_POST
@role_required(ADMIN)
def gold_seed(request: HttpRequest) -> HttpResponse:
    form = SeedForm(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            for e in errors:
                messages.error(request, e)
        return redirect("curation:gold")
    d = form.cleaned_data
    try:
        made = gold.gold_seed(actor=request.user, stage=d["stage"], rate=d["rate"] / 100, limit=d["limit"])
    except gold.GoldError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Seeded {len(made)} known-bad cop{'y' if len(made) == 1 else 'ies'} "
                                  f"into the {dict(ReviewStage.choices)[d['stage']].lower()} queue.")
    return redirect("curation:gold")

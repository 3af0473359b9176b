"""Admins edit each stage's guidelines and human-judgement reason codes; every save is a new version."""
from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from almita_web.roles import ADMIN, role_required
from curation.guidance.guidelines import GuidelineError, current_guide, guideline_save, reason_codes, rule_codes
from curation.models import GuidelineVersion, ReviewStage


@role_required(ADMIN)
def guidelines_edit(request: HttpRequest, stage: str) -> HttpResponse:
    if request.method not in ("GET", "POST"):
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    if stage not in ReviewStage.values:
        raise Http404("Unknown stage")
    guide, version = current_guide(stage)
    values = {"summary": guide.summary, "checks": "\n".join(guide.checks),
              "codes": "\n".join(f"{c}: {t}" for c, t in guide.human_codes)}
    if request.method == "POST":
        values = {k: request.POST.get(k, "")[:20000] for k in values}
        try:
            row = guideline_save(actor=request.user, stage=stage, **values)
        except GuidelineError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Saved version {row.version}; reviews from now on record it.")
            return redirect("curation:guidelines", stage=stage)
    return render(request, "curation/guidelines_edit.html", {
        "stage": stage, "stages": ReviewStage.choices, "values": values, "version": version, "guide": guide,
        "rule_codes": rule_codes(stage), "all_codes": reason_codes(stage, guide),
        "history": GuidelineVersion.objects.filter(stage=stage).select_related("created_by").order_by("-version")[:50],
    }, status=400 if request.method == "POST" else 200)

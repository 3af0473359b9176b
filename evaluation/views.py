from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from almita_web.roles import RESEARCHER, role_required
from evaluation.models import EvaluationRun


@role_required(RESEARCHER)
def runs(request: HttpRequest) -> HttpResponse:
    return render(request, "evaluation/runs.html", {"runs": EvaluationRun.objects.select_related("agent", "release")[:100]})

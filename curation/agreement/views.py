"""The analytics page (researchers, admins): yield, agreement and cost by generator setting (i15)."""
from __future__ import annotations

import csv

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from almita_web.roles import ADMIN, RESEARCHER, role_required
from curation.agreement.analytics import DIMENSIONS, analytics, bar_chart, csv_rows
from curation.agreement.economics import economics
from curation.models import ReviewItem, ReviewStage
from curation.releases.services import guarded
from generation.models import CurationStatus, GenerationJob, Test


def overall_economics() -> dict:
    return economics(job_ids=GenerationJob.objects.values_list("pk", flat=True),
                     accepted_tests=Test.objects.filter(status=CurationStatus.ACCEPTED).count(),
                     item_ids=ReviewItem.objects.values_list("pk", flat=True))


@role_required(RESEARCHER, ADMIN)
@require_GET
def analytics_page(request: HttpRequest) -> HttpResponse:
    data = analytics()
    labels = dict(DIMENSIONS)
    stages = []
    for stage, dims in data.items():
        if not any(rows for rows in dims.values()):
            continue
        stages.append({"stage": stage, "label": ReviewStage(stage).label, "dims": [
            {"dim": dim, "label": labels[dim], "rows": rows, "chart": mark_safe(bar_chart(rows))}  # escaped inside
            for dim, rows in dims.items()]})
    return render(request, "curation/analytics.html", {"stages": stages, "economics": overall_economics()})


@role_required(RESEARCHER, ADMIN)
@require_GET
def analytics_csv(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="analytics-by-setting.csv"'
    csv.writer(response).writerows(guarded(csv_rows(analytics())))  # the one formula guard
    return response

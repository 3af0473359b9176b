"""The analytics page (researchers, admins): yield, agreement and cost by generator setting (i15)."""
from __future__ import annotations

import csv
import hashlib

from django.contrib import messages
from django.core.cache import cache
from django.db.models import Count, Max
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from almita_web.roles import ADMIN, RESEARCHER, role_required
from curation.agreement.analytics import DIMENSIONS, analytics, bar_chart, csv_rows, stage_analytics
from curation.agreement.economics import economics
from curation.models import AuditEvent, Resolution, Review, ReviewItem, ReviewStage
from curation.releases.services import guarded
from generation.models import CurationStatus, GenerationJob, LLMCall, Test


def overall_economics() -> dict:
    return economics(job_ids=GenerationJob.objects.values_list("pk", flat=True),
                     accepted_tests=Test.objects.filter(status=CurationStatus.ACCEPTED).count(),
                     item_ids=ReviewItem.objects.values_list("pk", flat=True))


def data_mark() -> str:
    """A fingerprint of everything the analytics depend on: every change of curation state is an
    audit event; verdicts, items and LLM calls are counted and their latest times taken (times,
    not ids alone: a test database reuses ids). Five indexed aggregates, a few milliseconds."""
    parts = [
        AuditEvent.objects.aggregate(n=Count("pk"), m=Max("pk"), t=Max("at")),
        ReviewItem.objects.aggregate(n=Count("pk"), m=Max("pk"), t=Max("created_at"), d=Max("decided_at")),
        Review.objects.aggregate(n=Count("pk"), m=Max("pk"), t=Max("updated_at")),
        Resolution.objects.aggregate(n=Count("pk"), m=Max("pk"), t=Max("created_at")),
        LLMCall.objects.aggregate(n=Count("pk"), m=Max("pk")),
    ]
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:24]


def cached_slice(stage: str, dim: str, mark: str) -> list[dict]:
    """One stage's rows for one slice, kept in the shared cache until the data changes (at 50,000
    items a stage took about a second to compute; bench/scale.py times the page)."""
    from projects.context import project_for_new_row

    key = f"curation:analytics:{project_for_new_row()}:{stage}:{dim}:{mark}"
    rows = cache.get(key)
    if rows is None:
        rows = stage_analytics(stage, dims=[dim])[dim]
        cache.set(key, rows, 24 * 3600)
    return rows


METRICS = [("acceptance", "Acceptance"), ("percent_agreement", "Agreement"), ("kappa", "Cohen's κ"),
           ("alpha", "Krippendorff's α"), ("adjudication", "Adjudicated")]


def _choice(request: HttpRequest, name: str, allowed: list[str], default: str) -> str:
    value = request.GET.get(name) or default
    if value not in allowed:
        messages.error(request, f"Unknown {name} {value[:40]!r}: showing {default}.")
        return default
    return value


@role_required(RESEARCHER, ADMIN)
@require_GET
def analytics_page(request: HttpRequest) -> HttpResponse:
    """One table: the chosen slice (generator setting) for one stage or all, and a chart of the
    chosen measure over its rows (issue #31; it was one table per stage and slice)."""
    stage = _choice(request, "stage", ["all", *ReviewStage.values], "all")
    dim = _choice(request, "slice", [d for d, _ in DIMENSIONS], DIMENSIONS[0][0])
    metric = _choice(request, "metric", [m for m, _ in METRICS], METRICS[0][0])
    labels = dict(ReviewStage.choices)
    rows = []
    mark = data_mark()
    for s in (ReviewStage.values if stage == "all" else [stage]):
        for r in cached_slice(s, dim, mark):
            rows.append({**r, "stage": s, "stage_label": labels[s]})
    chart_rows = [{**r, "value": f"{r['stage_label']} · {r['value']}" if stage == "all" else r["value"]} for r in rows]
    return render(request, "curation/analytics.html", {
        "rows": rows, "chart": mark_safe(bar_chart(chart_rows, metric)) if rows else "",  # escaped inside
        "stage": stage, "slice": dim, "metric": metric, "stages": ReviewStage.choices, "dimensions": DIMENSIONS,
        "metrics": METRICS, "slice_label": dict(DIMENSIONS)[dim], "metric_label": dict(METRICS)[metric],
        "economics": overall_economics(),
    })


@role_required(RESEARCHER, ADMIN)
@require_GET
def analytics_csv(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="analytics-by-setting.csv"'
    csv.writer(response).writerows(guarded(csv_rows(analytics())))  # the one formula guard
    return response

"""The analytics page (researchers, admins): yield, agreement and cost by generator setting (i15).

The figures are computed by the worker and stored (curation.agreement.precompute): the page, its
status poll and analytics.csv read the stored table, a constant number of queries at any size."""
from __future__ import annotations

import csv

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from almita_web.roles import ADMIN, RESEARCHER, role_required
from curation.agreement import precompute
from curation.agreement.analytics import DIMENSIONS, bar_chart, csv_rows
from curation.models import ReviewStage
from curation.releases.services import guarded

METRICS = [("acceptance", "Acceptance"), ("percent_agreement", "Agreement"), ("kappa", "Cohen's κ"),
           ("alpha", "Krippendorff's α"), ("adjudication", "Adjudicated")]
RETRY_SECONDS = 10


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
    chosen measure over its rows (issue #31; it was one table per stage and slice). Stored figures
    older than the latest change are shown as such while the worker recomputes them."""
    stage = _choice(request, "stage", ["all", *ReviewStage.values], "all")
    dim = _choice(request, "slice", [d for d, _ in DIMENSIONS], DIMENSIONS[0][0])
    metric = _choice(request, "metric", [m for m, _ in METRICS], METRICS[0][0])
    state = precompute.status()
    labels = dict(ReviewStage.choices)
    rows = []
    tables = state.bundle["tables"] if state.bundle else {}
    for s in (ReviewStage.values if stage == "all" else [stage]):
        for r in tables.get(s, {}).get(dim, []):
            rows.append({**r, "stage": s, "stage_label": labels[s]})
    chart_rows = [{**r, "value": f"{r['stage_label']} · {r['value']}" if stage == "all" else r["value"]} for r in rows]
    return render(request, "curation/analytics.html", {
        "rows": rows, "chart": mark_safe(bar_chart(chart_rows, metric)) if rows else "",  # escaped inside
        "stage": stage, "slice": dim, "metric": metric, "stages": ReviewStage.choices, "dimensions": DIMENSIONS,
        "metrics": METRICS, "slice_label": dict(DIMENSIONS)[dim], "metric_label": dict(METRICS)[metric],
        "economics": state.bundle["economics"] if state.bundle else None, "state": state,
    })


@role_required(RESEARCHER, ADMIN)
@require_GET
def analytics_status(request: HttpRequest) -> JsonResponse:
    """What the page polls while the figures are recomputed: are they current, and as of when."""
    state = precompute.status()
    return JsonResponse({"stored": state.bundle is not None, "stale": state.stale,
                         "computed_at": state.computed_at.isoformat() if state.computed_at else None})


@role_required(RESEARCHER, ADMIN)
@require_GET
def analytics_csv(request: HttpRequest) -> HttpResponse:
    """Every stage and slice from the stored table, each row with the time it was computed; 503
    with Retry-After while nothing is stored yet (the recompute has been asked for)."""
    state = precompute.status()
    if state.bundle is None:
        response = HttpResponse("The analytics are being computed; try again in a few seconds.\n",
                                status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(RETRY_SECONDS)
        return response
    computed_at = state.computed_at.isoformat(timespec="seconds")
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="analytics-by-setting.csv"'
    rows = csv_rows(state.bundle["tables"])
    header = next(rows)
    writer = csv.writer(response)
    writer.writerow([*header, "computed_at"])
    writer.writerows(guarded([*row, computed_at] for row in rows))  # the one formula guard
    if state.stale:
        response["X-Analytics-Stale"] = "recomputing"
    return response

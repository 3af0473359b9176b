"""Evaluation pages, for researchers (admins too): access check → form → service → redirect."""
from __future__ import annotations

import csv
import io

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from almita_web.bounds import bounded_ids_or_none
from almita_web.roles import RESEARCHER, role_required
from curation.releases.services import spreadsheet_safe
from evaluation import charts, services, session_services
from evaluation import metrics as M
from evaluation import sessions as SS
from evaluation import similarity as S
from evaluation.forms import AgentForm, CompareForm, DatasetCompareForm, RejudgeForm, RunForm, SessionRunForm
from evaluation.models import Agent, EvaluationRun, IllegalRunTransition, ResultState, SessionRun


def _metric_rows(report: dict) -> list[M.Metric]:
    metrics = M.metrics_from_json(report.get("metrics", {}))
    return [metrics[k] for k in M.METRIC_KEYS if k in metrics]


def _breakdown_rows(groups: dict) -> list[tuple[str, list[M.Metric]]]:
    def order(name: str) -> tuple:
        return (M.STAGES.index(name), "") if name in M.STAGES else (len(M.STAGES), name)

    return [(name, [M.Metric.from_dict(table[k]) for k in M.METRIC_KEYS if k in table])
            for name, table in sorted((groups or {}).items(), key=lambda kv: order(kv[0]))]


@require_GET
@role_required(RESEARCHER)
def runs(request: HttpRequest) -> HttpResponse:
    services.reference_agents_ensure()
    return render(request, "evaluation/runs.html", {
        "runs": services.runs_with_progress(EvaluationRun.objects.select_related("agent", "release"))[:200],
        "form": RunForm(),
        "similarity_default": S.describe(S.get_scorer(S.AUTO).name),
        "metric_labels": M.METRICS,
    })


@require_POST
@role_required(RESEARCHER)
def run_create(request: HttpRequest) -> HttpResponse:
    form = RunForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The run could not be created: " + "; ".join(
            f"{field}: {' '.join(errs)}" for field, errs in form.errors.items()))
        return redirect("evaluation:runs")
    data = form.cleaned_data
    try:
        run = services.run_create(agent=data["agent"], release=data["release"], created_by=request.user,
                                  similarity=data["similarity"], threshold=data["threshold"],
                                  concurrency=data["concurrency"], comparison=data["comparison"] or M.EXACT,
                                  trials=data["trials"] or 1, dst=data["dst"],
                                  action_labels=data["action_labels"] or "rules",
                                  max_error_share=0.1 if data["max_error_share"] is None else data["max_error_share"])
    except (services.EvaluationError, S.SimilarityUnavailable) as exc:
        messages.error(request, str(exc))
        return redirect("evaluation:runs")
    messages.success(request, f"Run #{run.pk} queued: {run.total} tests.")
    return redirect("evaluation:run_detail", run_id=run.pk)


def _health(errors: dict | None) -> dict | None:
    if not errors:
        return None
    return {**errors, "share_pct": f"{100 * float(errors.get('share') or 0):.1f}",
            "limit_pct": f"{100 * float(errors.get('limit') or 0):g}"}


def _status_context(run: EvaluationRun, report: dict | None = None) -> dict:
    """What the run's status card shows (the page and its polled fragment)."""
    return {
        "run": run, "progress": services.run_progress(run),
        # A finished run's report names the scorer as it ran (bf16 or fp32 encoder, say).
        "similarity_detail": (run.metrics or {}).get("similarity_detail") or S.describe(run.similarity),
        "comparison_detail": M.COMPARISONS.get(run.comparison, run.comparison),
        "unparseable": run.results.filter(state=ResultState.DONE, predicted_type=M.INVALID).count(),
        # A stopped run's stored (or live) report says whether it measured the agent (run_health).
        "health": None if run.is_active else _health((report or services.run_current_report(run)).get("errors")),
        "rejudge_form": RejudgeForm(initial={"similarity": S.AUTO, "threshold": run.threshold}),
        "rejudgements": run.rejudgements.order_by("-id")[:20],
    }


@require_GET
@role_required(RESEARCHER)
def run_status(request: HttpRequest, run_id: int) -> HttpResponse:
    """The status card alone, polled by the run page while the run is active."""
    run = get_object_or_404(EvaluationRun.objects.select_related("agent", "release", "rejudged_from"), pk=run_id)
    return render(request, "evaluation/_run_status.html", _status_context(run))


@require_GET
@role_required(RESEARCHER)
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(EvaluationRun.objects.select_related("agent", "release", "rejudged_from"), pk=run_id)
    report = services.run_current_report(run)
    show = request.GET.get("show", "wrong")
    results = run.results.select_related("entry").order_by("entry__conversation_id", "entry__position")
    if show == "wrong":
        results = results.filter(state=ResultState.DONE, correct=False)
    elif show == "invalid":
        results = results.filter(predicted_type=M.INVALID)
    elif show == "failed":
        results = results.filter(state=ResultState.FAILED)
    page = Paginator(results, 50).get_page(request.GET.get("page"))
    return render(request, "evaluation/run_detail.html", {
        **_status_context(run, report), "report": report, "metrics": _metric_rows(report),
        "metrics_answered": _metric_rows({"metrics": report.get("metrics_answered")}),
        "by_noise": _breakdown_rows(report.get("by_noise")),
        "by_stage": _breakdown_rows(report.get("by_stage")),
        "metric_labels": M.METRICS, "page": page, "show": show,
        "confusions": services.api_confusions(run),
    })


@require_GET
@role_required(RESEARCHER)
def run_results_csv(request: HttpRequest, run_id: int) -> StreamingHttpResponse:
    """Every test's expected action, the agent's answer, the flags and the reason, as CSV."""
    run = get_object_or_404(EvaluationRun, pk=run_id)

    def lines():
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=services.RESULT_COLUMNS)
        writer.writeheader()
        for n, row in enumerate(services.run_result_rows(run), 1):
            writer.writerow(spreadsheet_safe(row))  # agent answers are untrusted text
            if n % 200 == 0:
                yield out.getvalue()
                out.seek(0)
                out.truncate()
        yield out.getvalue()

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-results.csv"'
    return response


def _move(request: HttpRequest, model, run_id: int, change, done: str, page: str) -> HttpResponse:
    """Cancel or resume a run (turn-level or sessions) and go back to its page with the outcome."""
    run = get_object_or_404(model, pk=run_id)
    try:
        change(run=run)
        messages.success(request, done.format(pk=run.pk))
    except IllegalRunTransition as exc:
        messages.error(request, str(exc))
    return redirect(page, run_id=run.pk)


@require_POST
@role_required(RESEARCHER)
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    return _move(request, EvaluationRun, run_id, services.run_cancel, "Run #{pk} cancelled.", "evaluation:run_detail")


@require_POST
@role_required(RESEARCHER)
def run_resume(request: HttpRequest, run_id: int) -> HttpResponse:
    return _move(request, EvaluationRun, run_id, services.run_resume, "Run #{pk} resumed.", "evaluation:run_detail")


@require_POST
@role_required(RESEARCHER)
def run_rejudge(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(EvaluationRun, pk=run_id)
    form = RejudgeForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The run could not be re-judged: " + "; ".join(
            f"{field}: {' '.join(errs)}" for field, errs in form.errors.items()))
        return redirect("evaluation:run_detail", run_id=run.pk)
    try:
        new = services.run_rejudge(run=run, similarity=form.cleaned_data["similarity"],
                                   threshold=form.cleaned_data["threshold"], created_by=request.user)
    except (services.EvaluationError, S.SimilarityUnavailable) as exc:
        messages.error(request, str(exc))
        return redirect("evaluation:run_detail", run_id=run.pk)
    messages.success(request, f"Run #{new.pk} queued: the {new.total} answers of run #{run.pk} judged again "
                              f"with {new.similarity}, threshold {new.threshold}.")
    return redirect("evaluation:run_detail", run_id=new.pk)


@require_GET
@role_required(RESEARCHER)
def agents(request: HttpRequest) -> HttpResponse:
    services.reference_agents_ensure()
    return render(request, "evaluation/agents.html", {"agents": Agent.objects.all(), "form": AgentForm()})


@require_POST
@role_required(RESEARCHER)
def agent_create(request: HttpRequest) -> HttpResponse:
    form = AgentForm(request.POST)
    if not form.is_valid():
        return render(request, "evaluation/agents.html", {"agents": Agent.objects.all(), "form": form}, status=400)
    try:
        agent = services.agent_create(**form.cleaned_data)
    except services.EvaluationError as exc:
        messages.error(request, str(exc))
        return redirect("evaluation:agents")
    messages.success(request, f"Agent {agent.name} created.")
    return redirect("evaluation:agents")


@require_POST
@role_required(RESEARCHER)
def agent_check(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = get_object_or_404(Agent, pk=agent_id)
    ok, message = services.agent_check(agent)
    (messages.success if ok else messages.error)(request, message)
    return redirect("evaluation:agents")


@require_GET
@role_required(RESEARCHER)
def compare(request: HttpRequest) -> HttpResponse:
    form = CompareForm(request.GET or None)
    rows, chart, differences = [], None, []
    if form.is_valid():
        selected = list(form.cleaned_data["runs"].order_by("id"))
        rows = services.runs_compare(selected)
        differences = services.runs_differences(selected)
        series = [(f"#{r['run'].pk} {r['run'].agent.name}",
                   [r["metrics"][k].percent if k in r["metrics"] else None for k in M.METRIC_KEYS]) for r in rows]
        chart = charts.bar_chart([label for _, label in M.METRICS], series,
                                 title="Evaluation metrics by run (percent)")
    return render(request, "evaluation/compare.html", {
        "form": form, "rows": [(r, [r["metrics"].get(k) for k in M.METRIC_KEYS]) for r in rows],
        "chart": chart, "metric_labels": M.METRICS, "differences": differences,
        "baseline": rows[0]["run"] if rows else None,
        "runs": EvaluationRun.objects.select_related("agent", "release")[:200],
        "selected": set(request.GET.getlist("runs")),
    })


@require_GET
@role_required(RESEARCHER)
def datasets(request: HttpRequest) -> HttpResponse:
    form = DatasetCompareForm(request.GET or None)
    result, chart = None, None
    if form.is_valid():
        a, b = form.cleaned_data["release_a"], form.cleaned_data["release_b"]
        result = services.releases_compare(release_a=a, release_b=b, metric=form.cleaned_data["metric"])
        chart = charts.scatter(result["points"], x_label=f"{result['metric_label']} @ {a}",
                               y_label=f"{result['metric_label']} @ {b}",
                               title=f"{result['metric_label']}: {a} vs {b}")
    return render(request, "evaluation/datasets.html", {"form": form, "result": result, "chart": chart})


# --------------------------------------------------------------------------- session runs


def _session_status_context(run: SessionRun) -> dict:
    return {"run": run, "progress": services.run_progress(run)}


@require_GET
@role_required(RESEARCHER)
def sessions(request: HttpRequest) -> HttpResponse:
    runs = SessionRun.objects.select_related("agent", "release").annotate(
        evaluated=Count("results", filter=Q(results__state=ResultState.DONE)))[:200]
    return render(request, "evaluation/sessions.html", {"runs": runs, "form": SessionRunForm(),
                                                        "metric_labels": SS.SESSION_METRICS})


@require_POST
@role_required(RESEARCHER)
def session_create(request: HttpRequest) -> HttpResponse:
    form = SessionRunForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The session run could not be created: " + "; ".join(
            f"{field}: {' '.join(errs)}" for field, errs in form.errors.items()))
        return redirect("evaluation:sessions")
    try:
        run = session_services.session_run_create(created_by=request.user, **form.cleaned_data)
    except services.EvaluationError as exc:
        messages.error(request, str(exc))
        return redirect("evaluation:sessions")
    messages.success(request, f"Session run #{run.pk} queued: {run.total} conversations.")
    return redirect("evaluation:session_detail", run_id=run.pk)


@require_GET
@role_required(RESEARCHER)
def session_status(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(SessionRun.objects.select_related("agent", "release"), pk=run_id)
    return render(request, "evaluation/_session_status.html", _session_status_context(run))


@require_GET
@role_required(RESEARCHER)
def session_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(SessionRun.objects.select_related("agent", "release"), pk=run_id)
    report = session_services.session_current_report(run)
    metrics = report.get("metrics") or {}
    page = Paginator(run.results.order_by("conversation_id"), 25).get_page(request.GET.get("page"))
    return render(request, "evaluation/session_detail.html", {
        **_session_status_context(run), "report": report, "cells": SS.metric_cells(metrics), "page": page,
        "metric_labels": SS.SESSION_METRICS,
    })


@require_POST
@role_required(RESEARCHER)
def session_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    return _move(request, SessionRun, run_id, session_services.session_run_cancel, "Session run #{pk} cancelled.",
                 "evaluation:session_detail")


@require_POST
@role_required(RESEARCHER)
def session_resume(request: HttpRequest, run_id: int) -> HttpResponse:
    return _move(request, SessionRun, run_id, session_services.session_run_resume, "Session run #{pk} resumed.",
                 "evaluation:session_detail")


PERCENT_SESSION_METRICS = [(k, label) for k, label in SS.SESSION_METRICS if k != "avg_turns"]


@require_GET
@role_required(RESEARCHER)
def session_compare(request: HttpRequest) -> HttpResponse:
    """Several session runs side by side: their metrics with intervals, and a bar chart."""
    ids = sorted(set(bounded_ids_or_none(request.GET.getlist("runs"), "runs") or []))
    runs = list(SessionRun.objects.filter(pk__in=ids).select_related("agent", "release").order_by("id"))
    reports = [(run, session_services.session_current_report(run).get("metrics") or {}) for run in runs]
    rows = [(run, SS.metric_cells(metrics)) for run, metrics in reports]
    chart = None
    if len(rows) >= 2:
        series = [(f"#{run.pk} {run.agent.name}",
                   [None if (metrics.get(k) or {}).get("value") is None else 100 * metrics[k]["value"]
                    for k, _ in PERCENT_SESSION_METRICS]) for run, metrics in reports]
        chart = charts.bar_chart([label for _, label in PERCENT_SESSION_METRICS], series,
                                 title="Session metrics by run (percent)")
    return render(request, "evaluation/session_compare.html", {
        "rows": rows, "chart": chart, "metric_labels": SS.SESSION_METRICS,
        "asked": bool(request.GET.getlist("runs")),
    })

"""The admins' generation dashboard: launch, watch (polled fragments), inspect jobs and items."""
from __future__ import annotations

import json

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from almita_web.roles import ADMIN, role_required
from generation import llm, loop_views, services
from generation.forms import LLM_STAGES, CancelForm, JobForm
from generation.pipeline.render import HIGHLIGHT_COLOUR
from generation.rates import job_rates
from generation.models import (
    Api, Conversation, ConversationGraph, Discard, Flowgraph, GenerationJob, IllegalTransition, Intent, LLMBatch, LLMCall,
    Procedure, SampledPath, Test,
)

# URL kind → (model, title, has a graph picture)
ITEM_KINDS = {
    "intent": (Intent, "Intent", False),
    "procedure": (Procedure, "Procedure", False),
    "api": (Api, "API", False),
    "flowgraph": (Flowgraph, "Flowgraph", True),
    "conversation_graph": (ConversationGraph, "Conversation graph", True),
    "path": (SampledPath, "Sampled path", True),
    "conversation": (Conversation, "Conversation", False),
    "test": (Test, "Test", False),
}
STAGE_KIND = {"intents": "intent", "procedures": "procedure", "apis": "api", "flowgraph": "flowgraph",
              "conversation_graph": "conversation_graph", "paths": "path", "conversations": "conversation",
              "tests": "test"}


def _jobs_context() -> dict:
    jobs = list(GenerationJob.objects.all()[:30])
    return {"jobs": [{"job": j, "funnel": services.job_funnel(j)} for j in jobs],
            "any_active": any(not j.is_terminal for j in jobs)}


@role_required(ADMIN)
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    estimate, message = _estimate_from_query({"intents": JobForm.base_fields["intents"].initial})
    return render(request, "generation/dashboard.html", {
        "form": JobForm(), "endpoint": llm.endpoint_configured(), "estimate": estimate, "estimate_message": message,
        "no_endpoint_message": llm.NO_ENDPOINT_MESSAGE, **_jobs_context(),
    })


@role_required(ADMIN)
@require_GET
def jobs_fragment(request: HttpRequest) -> HttpResponse:
    return render(request, "generation/_jobs.html", _jobs_context())


def _estimate_from_query(query) -> tuple[dict | None, str]:
    """(estimate, message) for the launch form's current values (GET parameters), never raising."""
    from generation.services.estimate import job_estimate

    config = {k: query.get(k) for k in ("procedures_per_intent", "paths", "conversation_graph", "conversations")
              if query.get(k)}
    config["models"] = {s: query[f"model_{s}"] for s in LLM_STAGES if query.get(f"model_{s}")}
    inputs = None
    existing = query.get("existing") or ""
    try:
        intents = int(query.get("intents") or 0) or int(query.get("seed_lines") or 0)
        if intents:
            config["intents"] = intents
        elif existing in services.EXISTING_LEVELS:
            config["start"] = services.EXISTING_LEVELS[existing][0]
            inputs = services.existing_imports(existing).count()
        else:
            return None, "Give a number of intents (or choose what to start from) to see an estimate."
        cfg = services.job_config_normalise(config)
    except (ValueError, services.JobConfigError) as exc:
        return None, f"No estimate: {exc}"
    return job_estimate(cfg, inputs), ""


@role_required(ADMIN)
@require_GET
def job_estimate_fragment(request: HttpRequest) -> HttpResponse:
    estimate, message = _estimate_from_query(request.GET)
    return render(request, "generation/_estimate.html", {"estimate": estimate, "message": message})


@role_required(ADMIN)
@require_POST
def job_launch(request: HttpRequest) -> HttpResponse:
    form = JobForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            job = services.job_create(created_by=request.user, **form.job_arguments())
        except services.JobConfigError as exc:
            form.add_error(None, str(exc))
        else:
            # Tagged: the job page drops it once the job has finished (it would still say "queued").
            messages.success(request, f"{job} queued.", extra_tags="job-queued")
            return redirect("generation:job", job_id=job.pk)
    estimate, message = _estimate_from_query(request.POST)
    return render(request, "generation/dashboard.html", {
        "form": form, "endpoint": llm.endpoint_configured(), "no_endpoint_message": llm.NO_ENDPOINT_MESSAGE,
        "estimate": estimate, "estimate_message": message,
        **_jobs_context(),
    }, status=400)


@role_required(ADMIN)
@require_POST
def endpoint_test(request: HttpRequest) -> HttpResponse:
    """Ask the configured endpoint once: provider detected, structured outputs, batches (remembered)."""
    from django.conf import settings

    from generation.llm.capabilities import probe

    if not llm.endpoint_configured():
        messages.error(request, llm.NO_ENDPOINT_MESSAGE)
        return redirect("generation:dashboard")
    return render(request, "generation/dashboard.html", {
        "form": JobForm(), "endpoint": True, "probe": probe(), "api_version": settings.OPENAI_API_VERSION,
        **_jobs_context()})


def _job_context(job: GenerationJob) -> dict:
    if services.job_watchdog(job):  # a stalled job is shown as failed, with the reason
        job.refresh_from_db()
    funnel = services.job_funnel(job)
    return {"job": job, "funnel": funnel, "counts": services.job_artifact_counts(job), "rates": job_rates(job),
            "totals": {k: sum(r[k] for r in funnel) for k in ("calls", "prompt_tokens", "completion_tokens",
                                                               "errors", "retried", "cached", "invalid",
                                                               "lost", "in_flight", "estimated", "repaired",
                                                               "resampled")}}


@role_required(ADMIN)
@require_GET
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(GenerationJob, pk=job_id)
    examples: dict[tuple[str, str], list[Discard]] = {}
    for d in Discard.objects.filter(job=job).order_by("stage", "reason", "id"):
        group = examples.setdefault((d.stage, d.reason), [])
        if len(group) < 3:
            group.append(d)
    reasons = (Discard.objects.filter(job=job).values("stage", "reason").annotate(n=Count("id"))
               .order_by("stage", "-n"))
    calls = Paginator(LLMCall.objects.filter(job=job).order_by("-id").only(
        "id", "stage", "key", "attempt", "repair", "resample", "rules", "model", "template", "template_version",
        "outcome", "latency_ms", "output_form", "batch_id",
        "prompt_tokens", "completion_tokens", "cost_usd", "error", "created_at"), 50).get_page(request.GET.get("page"))
    return render(request, "generation/job.html", {
        **_job_context(job), "chains": _procedure_chains(job), **loop_views.job_loop_context(job), "reasons": [{**r, "examples": examples.get((r["stage"], r["reason"]), [])} for r in reasons],
        "calls": calls, "stage_kinds": STAGE_KIND,
        "batches": list(LLMBatch.objects.filter(job=job).order_by("id")) if job.config.get("batch") else None,
    })


CHAINS_SHOWN = 200


def _procedure_chains(job: GenerationJob) -> list[dict]:
    """Each procedure of a multi-API job with the API chain it was written around (#32 item 8)."""
    if not (job.config or {}).get("api_chains"):
        return []
    rows = Procedure.objects.filter(job=job).order_by("id").only("id", "title", "api_chain")[:CHAINS_SHOWN]
    return [{"procedure": p, "apis": [a.get("name", "") for a in p.api_chain.get("apis", [])],
             "links": p.api_chain.get("links", [])} for p in rows if p.api_chain]


@role_required(ADMIN)
@require_GET
def job_fragment(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(GenerationJob, pk=job_id)
    return render(request, "generation/_job_progress.html", {**_job_context(job), "stage_kinds": STAGE_KIND})


@role_required(ADMIN)
@require_POST
def job_cancel(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(GenerationJob, pk=job_id)
    CancelForm(request.POST)
    try:
        job = services.job_cancel(job=job)
        messages.success(request, f"{job}: {job.get_status_display().lower()}.")
    except IllegalTransition:
        messages.error(request, f"{job} is {job.get_status_display().lower()} and cannot be cancelled.")
    return redirect("generation:job", job_id=job.pk)


@role_required(ADMIN)
@require_GET
def llm_call(request: HttpRequest, job_id: int, call_id: int) -> HttpResponse:
    job = get_object_or_404(GenerationJob, pk=job_id)  # the project's jobs only: a call is reached through its job
    call = get_object_or_404(LLMCall, pk=call_id, job_id=job.pk)
    return render(request, "generation/llm_call.html", {"call": call, "job": job})


@role_required(ADMIN)
@require_GET
def job_items(request: HttpRequest, job_id: int, stage: str) -> HttpResponse:
    job = get_object_or_404(GenerationJob, pk=job_id)
    kind = STAGE_KIND.get(stage)
    if kind is None:
        raise Http404("unknown stage")
    model = ITEM_KINDS[kind][0]
    qs = model.objects.filter(job=job)
    if stage == "conversation_graph":
        qs = qs.filter(key__startswith="conversation_graph:") | qs.filter(key__startswith="noise:") | qs.filter(
            origin="imported")
    page = Paginator(qs.order_by("id"), 100).get_page(request.GET.get("page"))
    return render(request, "generation/items.html", {"job": job, "stage": stage, "kind": kind, "page": page,
                                                     "title": ITEM_KINDS[kind][1]})


@role_required(ADMIN)
@require_GET
def item_detail(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    if kind not in ITEM_KINDS and kind.replace("-", "_") in ITEM_KINDS:
        # One spelling in every page URL, the review stages' (conversation_graph); old links still work.
        return redirect("generation:item", kind=kind.replace("-", "_"), pk=pk, permanent=True)
    if kind not in ITEM_KINDS:
        raise Http404("unknown kind")
    model, title, has_graph = ITEM_KINDS[kind]
    obj = get_object_or_404(model, pk=pk)
    drawing = services.graph_svg(obj=obj) if has_graph else None  # never drawn in the request
    if drawing is not None and kind == "path":  # highlighted in the browser (static/js/graph.js)
        drawing.update(path=json.dumps([str(n) for n in obj.node_ids or []]), path_colour=HIGHLIGHT_COLOUR)
    extra = loop_views.graph_coverage_context(obj) if kind == "conversation_graph" else {}  # i15
    return render(request, "generation/item.html", {"obj": obj, "kind": kind, "title": title, "drawing": drawing,
                                                    **extra})

"""Coverage on the graph and job pages, and the "Fill the gaps" action (i15). Admins only, like the
rest of the generation dashboard."""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from almita_web.roles import ADMIN, role_required
from generation import gaps
from generation.coverage import coverage_drawing, coverage_of, graphs_of_job, leaf_graphs, report
from generation.models import ConversationGraph, GenerationJob


class FillForm(forms.Form):
    conversations = forms.ChoiceField(
        choices=[("offline", "Offline (no LLM)"), ("llm", "LLM (prompt A.6)")], initial="offline",
        label="Conversations")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.retry_limit = gaps.retry_limit()
        self.fields["conversations"].help_text = (
            f"Each uncovered edge gets at most {self.retry_limit} gap-filling attempts; edges rejected that "
            "often are listed instead of tried again.")


def graph_coverage_context(cg: ConversationGraph) -> dict[str, Any]:
    """What the conversation-graph page shows under "Coverage by accepted conversations"."""
    (_, cov, err), = coverage_of([cg])
    if cov is None:
        return {"coverage_error": err}
    drawing = coverage_drawing(cg, cov)  # made by the worker; the page polls while it draws
    attempts = gaps.previous_attempts(cg)
    return {"coverage": cov.as_dict(), "coverage_svg": drawing["svg"], "coverage_svg_error": drawing["error"],
            "coverage_drawing": drawing,
            "fill_form": FillForm(), "gap_attempts": [{"edge": f"{u} → {v}", "attempts": attempts[(str(u), str(v))]}
                                                      for u, v in cov.uncovered_edges]}


def job_loop_context(job: GenerationJob) -> dict[str, Any]:
    from generation.panels import job_panels

    graphs = graphs_of_job(job)
    return {"job_coverage": report(leaf_graphs(graphs))["summary"], "job_graphs": graphs.count(), "fill_form": FillForm(),
            **job_panels(job)}


def _launch(request: HttpRequest, graphs, label: str, back: HttpResponse) -> HttpResponse:
    form = FillForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose how to write the conversations: offline or LLM.")
        return back
    from generation.services import JobConfigError

    try:
        job, plans = gaps.gaps_fill(graphs=graphs, conversations=form.cleaned_data["conversations"],
                                    created_by=request.user, name=f"Fill the gaps of {label}")
    except (gaps.NothingToFill, JobConfigError) as exc:
        messages.error(request, str(exc))
        return back
    n = sum(len(p.paths) for p in plans)
    messages.success(request, f"{job} queued: {n} paths for the uncovered edges of {label}.")
    return redirect("generation:job", job_id=job.pk)


@role_required(ADMIN)
@require_POST
def fill_graph(request: HttpRequest, pk: int) -> HttpResponse:
    cg = get_object_or_404(ConversationGraph, pk=pk)
    return _launch(request, ConversationGraph.objects.filter(pk=cg.pk), f"graph {cg.pk}",
                   redirect("generation:item", kind="conversation_graph", pk=cg.pk))


@role_required(ADMIN)
@require_POST
def fill_job(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(GenerationJob, pk=job_id)
    return _launch(request, leaf_graphs(graphs_of_job(job)), f"job {job.pk}", redirect("generation:job", job_id=job.pk))

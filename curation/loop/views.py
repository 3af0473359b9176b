"""The closed loop on the release page (i15): coverage, economics and "Fill the gaps" (admins)."""
from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from almita_web.roles import ADMIN, role_required
from curation.loop.services import release_graphs
from curation.models import Release
from generation import gaps
from generation.loop_views import FillForm


@role_required(ADMIN)
@require_POST
def fill_release(request: HttpRequest, pk: int) -> HttpResponse:
    from generation.services import JobConfigError

    release = get_object_or_404(Release, pk=pk)
    form = FillForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose how to write the conversations: offline or LLM.")
        return redirect("datasets:release", pk=pk)
    try:
        job, plans = gaps.gaps_fill(graphs=release_graphs(release), created_by=request.user,
                                    conversations=form.cleaned_data["conversations"],
                                    name=f"Fill the gaps of release {release}")
    except (gaps.NothingToFill, JobConfigError) as exc:
        messages.error(request, str(exc))
        return redirect("datasets:release", pk=pk)
    messages.success(request, f"{job} queued: {sum(len(p.paths) for p in plans)} paths for the gaps of {release}.")
    return redirect("generation:job", job_id=job.pk)


@role_required(ADMIN)
def feedback(request: HttpRequest, parent: str, pk: int) -> HttpResponse:
    """GET: what reviewers said about the rejected children; POST: regenerate them with it."""
    from django.http import Http404, HttpResponseNotAllowed
    from django.shortcuts import render

    from curation.loop.feedback import CHILDREN, FeedbackError, feedback_for, regenerate_with_feedback
    from generation.services import JobConfigError

    if parent not in CHILDREN:
        raise Http404("unknown parent kind")
    from generation.models import ConversationGraph, Flowgraph, Procedure

    parents = {"procedure": Procedure, "flowgraph": Flowgraph, "conversation_graph": ConversationGraph}
    if not parents[parent].objects.filter(pk=pk).exists():  # none, or another project's
        raise Http404("no such artifact")
    if request.method == "POST":
        try:
            job, fb = regenerate_with_feedback(parent=parent, parent_id=pk, created_by=request.user)
        except (FeedbackError, JobConfigError) as exc:
            messages.error(request, str(exc))
            return redirect("curation:feedback", parent=parent, pk=pk)
        messages.success(request, f"{job} queued: {len(fb.rejected)} rejected children regenerated with feedback.")
        return redirect("generation:job", job_id=job.pk)
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET", "POST"])
    fb = feedback_for(parent=parent, parent_id=pk)
    return render(request, "curation/feedback.html", {"fb": fb, "parent": parent, "pk": pk,
                                                      "codes": fb.codes.most_common(),
                                                      "label": parent.replace("_", " ")})

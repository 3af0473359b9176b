"""Pages for your own agent (issue #18): create HTTP and own-prompt agents, download a release as
the portable file the standalone runner reads. Researchers (and admins) only."""
from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from almita_web.roles import RESEARCHER, role_required
from curation.models import Release
from evaluation import agent_kinds, services
from evaluation.agent_forms import HttpAgentForm, OwnPromptAgentForm
from evaluation.models import Agent
from evaluation.portable import portable_chunks, portable_name


def _forget_typed_secret(form):
    """A key typed where its variable's NAME belongs is not echoed back into the page."""
    if form is not None and "api_key_env" in form.errors:
        form.data = form.data.copy()
        form.data["api_key_env"] = ""
    return form


def _page(request: HttpRequest, status: int = 200, **forms) -> HttpResponse:
    for form in forms.values():
        _forget_typed_secret(form)
    return render(request, "evaluation/own_agents.html", {
        "http_form": forms.get("http_form") or HttpAgentForm(),
        "own_form": forms.get("own_form") or OwnPromptAgentForm(),
        "agents": Agent.objects.filter(mode__in=agent_kinds.KINDS),
        "releases": Release.objects.order_by("-created_at", "-id")[:20],
    }, status=status)


@require_GET
@role_required(RESEARCHER)
def own_agents(request: HttpRequest) -> HttpResponse:
    return _page(request)


def _create(request: HttpRequest, form_class, form_key: str, create, label: str) -> HttpResponse:
    """Form → service → redirect, shared by both agent kinds of this page."""
    form = form_class(request.POST)
    if not form.is_valid():
        return _page(request, status=400, **{form_key: form})
    try:
        agent = create(**form.cleaned_data)
    except services.EvaluationError as exc:
        messages.error(request, str(exc))
        return redirect("evaluation:own_agents")
    messages.success(request, f"{label} {agent.name} created.")
    return redirect("evaluation:own_agents")


@require_POST
@role_required(RESEARCHER)
def http_agent_create(request: HttpRequest) -> HttpResponse:
    return _create(request, HttpAgentForm, "http_form", agent_kinds.agent_create_http, "HTTP agent")


@require_POST
@role_required(RESEARCHER)
def own_prompt_agent_create(request: HttpRequest) -> HttpResponse:
    return _create(request, OwnPromptAgentForm, "own_form", agent_kinds.agent_create_own_prompt, "Agent")


@require_GET
@role_required(RESEARCHER)
def release_portable(request: HttpRequest, release_id: int) -> StreamingHttpResponse:
    release = get_object_or_404(Release, pk=release_id)
    response = StreamingHttpResponse(portable_chunks(release), content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{portable_name(release)}"'
    return response

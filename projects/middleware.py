"""The project of a request: `/p/<slug>/…` in the URL, else the user's current project.

`ProjectPrefixMiddleware` (before CommonMiddleware) strips `/p/<slug>` from `path_info`, so the
existing URL patterns resolve unchanged, and sets the script prefix to `/p/<slug>/`, so every
`reverse()` and `{% url %}` made while answering produces links inside the project.
`ProjectAccessMiddleware` (after authentication) answers 404 for a slug the user is not a member
of, and for an unprefixed URL picks the user's current project: the last one used (kept in the
session), else their first, else Default. Site-wide paths (`/projects/`, `/admin/`, login,
static files) run with no project set. See projects.context for the rule queries follow.
"""
from __future__ import annotations

import contextvars
import re
from typing import Iterable, Iterator

from django.http import Http404, HttpRequest, HttpResponse
from django.urls import get_script_prefix, set_script_prefix

from projects import context

PREFIX_RE = re.compile(r"^/p/(?P<slug>[a-z0-9][a-z0-9-]{0,49})(?P<rest>/.*)?$")
SITE_WIDE = ("/projects/", "/admin/", "/login/", "/logout/", "/static/", "/healthz", "/favicon.ico")
SESSION_KEY = "almita_project"


def _not_found(request: HttpRequest) -> HttpResponse:
    from django.views import defaults

    return defaults.page_not_found(request, Http404("No such project"))


def _iterate_in(ctx: contextvars.Context, content: Iterable[bytes]) -> Iterator[bytes]:
    """Run each step of a streamed body inside `ctx`, the answering request's project context."""
    it = iter(content)
    try:
        while True:
            try:
                chunk = ctx.run(next, it)
            except StopIteration:
                return
            yield chunk
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            ctx.run(close)


def keep_project(response: HttpResponse, project) -> HttpResponse:
    """A streamed response's rows are read after the view returned, when the middleware has already
    reset the current project: without this, a streamed CSV queried every project's rows (found by
    tests/projects/isolation). The body then runs in a copy of the context with `project` set."""
    if getattr(response, "streaming", False) and not getattr(response, "is_async", False):
        ctx = contextvars.copy_context()
        ctx.run(context.set_current, project)
        response.streaming_content = _iterate_in(ctx, response.streaming_content)
    return response


class ProjectPrefixMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        match = PREFIX_RE.match(request.path_info)
        if match is None:
            request.project_from_url = None
            return self.get_response(request)
        project = context.by_slug(match["slug"])
        if project is None:
            return _not_found(request)
        if match["rest"] is None:  # /p/<slug> → /p/<slug>/
            from django.http import HttpResponseRedirect

            return HttpResponseRedirect(f"{get_script_prefix()}p/{project.slug}/")
        request.project_from_url = project
        request.path_info = match["rest"]
        previous = get_script_prefix()
        set_script_prefix(f"{previous.rstrip('/')}/p/{project.slug}/")
        token = context.set_current(project)
        try:
            return keep_project(self.get_response(request), project)
        finally:
            context.reset_current(token)
            set_script_prefix(previous)


def is_member(user, project) -> bool:
    from almita_web.roles import user_roles

    return bool(user_roles(user, project.pk))


def user_projects(user):
    """The projects `user` may open: every one for a superuser, else those they hold a role in."""
    from projects.models import Project

    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user).distinct()


def current_for_user(request: HttpRequest):
    """The unprefixed URL's project: the session's last one, else the user's first, else Default.

    The session's project is trusted only while the user still holds a role there (checked by
    the caller through the session's role cache, so this costs no query on most requests)."""
    session = getattr(request, "session", None)
    slug = session.get(SESSION_KEY) if session is not None else None
    if slug:
        project = context.by_slug(slug)
        if project is not None:
            return project, True
    project = user_projects(request.user).order_by("id").first() or context.default_project()
    context.remember(project)
    if session is not None:
        session[SESSION_KEY] = project.slug
    return project, False


class ProjectAccessMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        project = getattr(request, "project_from_url", None)
        user = getattr(request, "user", None)
        authenticated = user is not None and user.is_authenticated
        if project is not None:
            if authenticated and not user.is_superuser:
                from almita_web.roles import request_roles

                if not request_roles(request):
                    return _not_found(request)
            if authenticated and hasattr(request, "session") and request.session.get(SESSION_KEY) != project.slug:
                request.session[SESSION_KEY] = project.slug
            request.project = project
            return self.get_response(request)
        if request.path_info.startswith(SITE_WIDE):
            request.project = None
            return self.get_response(request)
        if not authenticated:
            project = context.default_project()
            token = context.set_current(project)
        else:
            project, remembered = current_for_user(request)
            token = context.set_current(project)
            if remembered and not user.is_superuser:
                from almita_web.roles import request_roles

                if not request_roles(request):  # no longer a member there: back to their first
                    context.reset_current(token)
                    request.session.pop(SESSION_KEY, None)
                    project, _ = current_for_user(request)
                    token = context.set_current(project)
        request.project = project
        try:
            return keep_project(self.get_response(request), project)
        finally:
            context.reset_current(token)

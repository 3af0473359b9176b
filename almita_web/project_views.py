"""Pages of issue #30: the site administrator's projects and members, a project's settings page."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from almita_web.roles import ADMIN, role_required
from projects import context, services
from projects.forms import MemberForm, NewProjectForm, SettingsForm
from projects.models import Membership, Project


def _site_admin(request: HttpRequest) -> None:
    if not request.user.is_superuser:
        raise PermissionDenied("Projects and their members are managed by a site administrator.")


@login_required
@require_http_methods(["GET", "POST"])
def projects_page(request: HttpRequest) -> HttpResponse:
    """Every project with its members; create a project; set a user's roles in one."""
    _site_admin(request)
    new_form, member_form = NewProjectForm(), MemberForm()
    if request.method == "POST":
        if request.POST.get("action") == "create":
            new_form = NewProjectForm(request.POST)
            if new_form.is_valid():
                try:
                    project = services.project_create(**new_form.cleaned_data)
                except (services.ProjectError, ValueError) as exc:
                    messages.error(request, str(exc))
                else:
                    services.member_set(project=project, user=request.user, roles=[ADMIN])
                    messages.success(request, f"Project {project.name} created; you are its admin.")
                    return redirect("projects")
        elif request.POST.get("action") == "members":
            member_form = MemberForm(request.POST)
            project = Project.objects.filter(slug=request.POST.get("project", "")).first()
            if project is None:
                raise Http404("No such project")
            if member_form.is_valid():
                user = get_user_model().objects.filter(username=member_form.cleaned_data["username"]).first()
                if user is None:
                    messages.error(request, f"No user {member_form.cleaned_data['username']!r}.")
                else:
                    services.member_set(project=project, user=user, roles=member_form.cleaned_data["roles"])
                    messages.success(request, f"{user.username} in {project.name}: "
                                              f"{', '.join(member_form.cleaned_data['roles']) or 'no longer a member'}.")
                    return redirect("projects")
    rows = []
    members = Membership.objects.select_related("user").order_by("user__username", "role")
    by_project: dict[int, dict[str, list[str]]] = {}
    for m in members:
        by_project.setdefault(m.project_id, {}).setdefault(m.user.username, []).append(m.role)
    for project in Project.objects.order_by("name"):
        rows.append({"project": project, "members": sorted(by_project.get(project.pk, {}).items())})
    return render(request, "projects/list.html", {"rows": rows, "new_form": new_form, "member_form": member_form})


@role_required(ADMIN)
@require_http_methods(["GET", "POST"])
def project_settings(request: HttpRequest) -> HttpResponse:
    """The current project's settings, for its admins; every change is in the audit log."""
    project = context.current_project()
    if project is None:
        raise Http404("No project")
    form = SettingsForm(project=project)
    if request.method == "POST":
        form = SettingsForm(request.POST, project=project)
        if form.is_valid():
            from curation.models import AuditEvent

            try:
                with transaction.atomic():
                    before, after = services.settings_update(project=project, values=form.values())
                    if after:
                        AuditEvent.objects.create(actor=request.user, action=AuditEvent.Action.SETTINGS,
                                                  before=before, after=after, project_id=project.pk)
            except Exception as exc:  # noqa: BLE001 - a model validation error: shown, nothing saved
                if not hasattr(exc, "message_dict") and not isinstance(exc, services.ProjectError):
                    raise
                messages.error(request, f"Not saved: {exc}")
            else:
                messages.success(request, f"Saved: {', '.join(after) if after else 'nothing changed'}.")
                return redirect("project_settings")
    return render(request, "projects/settings.html", {"form": form, "project": project})

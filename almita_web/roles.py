"""The four roles, held per project (projects.Membership), and the one access check every view uses.

Roles are answered for the current project (projects.context; Default when none is set). A
superuser (the site-wide administrator) counts as an admin in every project. Roles are not hierarchical: an admin may open every page,
but an annotator is not a researcher, and so on.

Pages look the roles up once per ROLE_CACHE_SECONDS and keep them in the session (a groups
query on every request was a tenth of the review page's cost). The entry is tied to the user id,
the session auth hash and the superuser flag, so a role removed takes effect within a minute, and
a password change or another login never inherits it.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from functools import wraps

from django.contrib.auth.models import AnonymousUser, Group
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

ADMIN = "admin"
ANNOTATOR = "annotator"
ADJUDICATOR = "adjudicator"
RESEARCHER = "researcher"
ALL_ROLES = (ADMIN, ANNOTATOR, ADJUDICATOR, RESEARCHER)


def ensure_role_groups() -> None:
    """The groups of before projects (kept for the data migration's sake; roles are memberships now)."""
    for name in ALL_ROLES:
        Group.objects.get_or_create(name=name)


def _project_id() -> int:
    from projects.context import current_project_id, default_project_id

    pk = current_project_id()
    return pk if pk is not None else default_project_id()


def user_roles(user, project_id: int | None = None) -> set[str]:
    """The user's roles in `project_id` (default: the current project)."""
    if user is None or isinstance(user, AnonymousUser) or not user.is_authenticated or not user.is_active:
        return set()
    pid = _project_id() if project_id is None else project_id
    per_project = getattr(user, "_almita_roles_by_project", None)
    if per_project is None:
        per_project = user._almita_roles_by_project = {}
    cached = per_project.get(pid)
    if cached is None:
        from projects.models import Membership

        cached = set(Membership.objects.filter(user=user, project_id=pid).values_list("role", flat=True))
        if user.is_superuser:
            cached.add(ADMIN)
        per_project[pid] = cached
    return cached


ROLE_CACHE_SECONDS = 60
_SESSION_KEY = "_almita_roles"


def request_roles(request: HttpRequest) -> set[str]:
    """user_roles(request.user), remembered in the session for at most ROLE_CACHE_SECONDS."""
    user = getattr(request, "user", None)
    session = getattr(request, "session", None)
    if session is None or user is None or not user.is_authenticated or not user.is_active:
        return user_roles(user)
    pid = _project_id()
    per_project = getattr(user, "_almita_roles_by_project", None)
    if per_project is None:
        per_project = user._almita_roles_by_project = {}
    if pid in per_project:
        return per_project[pid]
    stamp = [user.pk, user.get_session_auth_hash(), user.is_superuser, pid]
    entry = session.get(_SESSION_KEY)
    now = time.time()
    if isinstance(entry, dict) and entry.get("stamp") == stamp and 0 <= now - entry.get("at", 0) < ROLE_CACHE_SECONDS:
        per_project[pid] = set(entry["roles"]) & set(ALL_ROLES)
        return per_project[pid]
    roles = user_roles(user, pid)
    session[_SESSION_KEY] = {"stamp": stamp, "at": now, "roles": sorted(roles)}
    return roles


def has_role(user, *roles: str) -> bool:
    """True when the user holds any of `roles`; admins hold every role's access."""
    held = user_roles(user)
    return bool(held & set(roles)) or ADMIN in held


def role_required(*roles: str) -> Callable:
    """View decorator: anonymous → login page; logged in without the role → 403."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            request_roles(request)  # fills the user's role cache from the session
            if not has_role(request.user, *roles):
                raise PermissionDenied(f"This page needs the role: {' or '.join(roles)}")
            return view(request, *args, **kwargs)

        wrapped.required_roles = roles  # type: ignore[attr-defined]
        return wrapped

    return decorator


def assign_roles(user, roles: Iterable[str], project=None) -> None:
    """Give `user` the roles in `project` (default: the current project, else Default)."""
    from projects.models import Membership

    pid = getattr(project, "pk", project) if project is not None else _project_id()
    for role in roles:
        if role not in ALL_ROLES:
            raise ValueError(f"{role!r} is not a role")
        Membership.objects.get_or_create(user=user, project_id=pid, role=role)
    forget_roles(user)


def remove_roles(user, roles: Iterable[str], project=None) -> None:
    from projects.models import Membership

    pid = getattr(project, "pk", project) if project is not None else _project_id()
    Membership.objects.filter(user=user, project_id=pid, role__in=list(roles)).delete()
    forget_roles(user)


def forget_roles(user) -> None:
    if hasattr(user, "_almita_roles_by_project"):
        del user._almita_roles_by_project


def roles_context(request: HttpRequest) -> dict:
    roles = request_roles(request)
    return {
        "user_roles": sorted(roles),  # one order whether the roles came from the database or the session
        "is_admin_role": ADMIN in roles,
        "is_annotator_role": bool(roles & {ANNOTATOR, ADMIN}),
        "is_adjudicator_role": bool(roles & {ADJUDICATOR, ADMIN}),
        "is_researcher_role": bool(roles & {RESEARCHER, ADMIN}),
    }


def sees_every_project(user) -> bool:
    """The Django admin shows every project's rows: it is for superusers, and for a user who is an
    admin in every project (on a one-project install, the admins of Default)."""
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if user.is_superuser:
        return True
    cached = getattr(user, "_almita_sees_all", None)
    if cached is None:
        from projects.models import Membership, Project

        admin_in = Membership.objects.filter(user=user, role=ADMIN).values("project_id").distinct().count()
        cached = user._almita_sees_all = admin_in > 0 and admin_in == Project.objects.count()
    return cached

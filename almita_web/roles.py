"""The four roles, as Django groups, and the one access check every view uses.

A superuser counts as an admin. Roles are not hierarchical: an admin may open every page,
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
    for name in ALL_ROLES:
        Group.objects.get_or_create(name=name)


def user_roles(user) -> set[str]:
    if user is None or isinstance(user, AnonymousUser) or not user.is_authenticated or not user.is_active:
        return set()
    cached = getattr(user, "_almita_roles", None)
    if cached is None:
        cached = set(user.groups.filter(name__in=ALL_ROLES).values_list("name", flat=True))
        if user.is_superuser:
            cached.add(ADMIN)
        user._almita_roles = cached
    return cached


ROLE_CACHE_SECONDS = 60
_SESSION_KEY = "_almita_roles"


def request_roles(request: HttpRequest) -> set[str]:
    """user_roles(request.user), remembered in the session for at most ROLE_CACHE_SECONDS."""
    user = getattr(request, "user", None)
    session = getattr(request, "session", None)
    if session is None or user is None or not user.is_authenticated or not user.is_active:
        return user_roles(user)
    cached = getattr(user, "_almita_roles", None)
    if cached is not None:
        return cached
    stamp = [user.pk, user.get_session_auth_hash(), user.is_superuser]
    entry = session.get(_SESSION_KEY)
    now = time.time()
    if isinstance(entry, dict) and entry.get("stamp") == stamp and 0 <= now - entry.get("at", 0) < ROLE_CACHE_SECONDS:
        user._almita_roles = set(entry["roles"]) & set(ALL_ROLES)
        return user._almita_roles
    roles = user_roles(user)
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


def assign_roles(user, roles: Iterable[str]) -> None:
    ensure_role_groups()
    user.groups.add(*Group.objects.filter(name__in=list(roles)))
    if hasattr(user, "_almita_roles"):
        del user._almita_roles


def roles_context(request: HttpRequest) -> dict:
    roles = request_roles(request)
    return {
        "user_roles": roles,
        "is_admin_role": ADMIN in roles,
        "is_annotator_role": bool(roles & {ANNOTATOR, ADMIN}),
        "is_adjudicator_role": bool(roles & {ADJUDICATOR, ADMIN}),
        "is_researcher_role": bool(roles & {RESEARCHER, ADMIN}),
    }

"""The four roles, as Django groups, and the one access check every view uses.

A superuser counts as an admin. Roles are not hierarchical: an admin may open every page,
but an annotator is not a researcher, and so on.
"""
from __future__ import annotations

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
    roles = user_roles(getattr(request, "user", None))
    return {
        "user_roles": roles,
        "is_admin_role": ADMIN in roles,
        "is_annotator_role": bool(roles & {ANNOTATOR, ADMIN}),
        "is_adjudicator_role": bool(roles & {ADJUDICATOR, ADMIN}),
        "is_researcher_role": bool(roles & {RESEARCHER, ADMIN}),
    }

"""Role permission classes, query-string filters and pagination shared by every app's api.py."""
from __future__ import annotations

from typing import Any, Callable

from rest_framework import serializers
from rest_framework.pagination import PageNumberPagination
from rest_framework.exceptions import NotFound
from rest_framework.permissions import BasePermission

from almita_web.roles import has_role, user_roles


class _RolePermission(BasePermission):
    roles: tuple[str, ...] = ()
    message = "This endpoint needs another role."

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        # A token caller is known only now (after the project middleware): outside the URL's
        # project, the project does not exist for them (404, like the pages).
        project = getattr(request._request, "project_from_url", None)
        if project is not None and not user.is_superuser and not user_roles(user, project.pk):
            raise NotFound("No such project.")
        return has_role(user, *self.roles)


def role_permission(*roles: str) -> type[BasePermission]:
    """A permission class admitting the given roles (admins always); anonymous callers get 401."""
    return type(f"Requires_{'_or_'.join(roles)}", (_RolePermission,), {
        "roles": roles, "message": f"This endpoint needs the role: {' or '.join(roles)}.",
    })


class Pagination(PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 500


def _int(value: str) -> int:
    from almita_web.bounds import bounded_id

    return bounded_id(value)


def _bool(value: str) -> bool:
    if value.lower() in ("1", "true", "yes"):
        return True
    if value.lower() in ("0", "false", "no"):
        return False
    raise ValueError(value)


CONVERTERS: dict[str, Callable[[str], Any]] = {"int": _int, "str": str, "bool": _bool}


class FilterMixin:
    """`filters = {"job": ("job_id", "int"), ...}`: query parameters mapped onto ORM lookups.

    A bad value is a 400 naming the parameter, never a silent empty page.
    """

    filters: dict[str, tuple[str, str]] = {}

    def filter_queryset(self, queryset):  # type: ignore[override]
        queryset = super().filter_queryset(queryset)  # type: ignore[misc]
        params = self.request.query_params  # type: ignore[attr-defined]
        for name, (lookup, kind) in self.filters.items():
            raw = params.get(name)
            if raw in (None, ""):
                continue
            try:
                value = CONVERTERS[kind](raw)
            except ValueError:
                raise serializers.ValidationError({name: f"'{raw}' is not a valid {kind}"}) from None
            queryset = queryset.filter(**{lookup: value})
        return queryset


def filter_parameters(filters: dict[str, tuple[str, str]]):
    """OpenAPI parameters for a FilterMixin's filters (so the schema documents them)."""
    from drf_spectacular.types import OpenApiTypes
    from drf_spectacular.utils import OpenApiParameter

    types = {"int": OpenApiTypes.INT, "str": OpenApiTypes.STR, "bool": OpenApiTypes.BOOL}
    return [OpenApiParameter(name, types[kind], description=f"filter on {lookup}") for name, (lookup, kind) in filters.items()]

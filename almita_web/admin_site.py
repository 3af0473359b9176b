"""The Django admin, open to the admin role only.

Verdicts are visible in the admin, and only admins may see other annotators' verdicts, so the
whole site is closed to every other role (not only to non-staff users).
"""
from __future__ import annotations

from django.contrib import admin

from almita_web.roles import ADMIN, has_role


class AlmitaAdminSite(admin.AdminSite):
    site_header = "Almita Studio administration"
    site_title = "Almita Studio"
    index_title = "Data and jobs"

    def has_permission(self, request) -> bool:
        return request.user.is_active and has_role(request.user, ADMIN)


class RoleModelAdmin(admin.ModelAdmin):
    """Grants the admin role full access without per-model Django permissions."""

    def _is_admin(self, request) -> bool:
        return request.user.is_active and has_role(request.user, ADMIN)

    def has_module_permission(self, request) -> bool:
        return self._is_admin(request)

    def has_view_permission(self, request, obj=None) -> bool:
        return self._is_admin(request)

    def has_add_permission(self, request) -> bool:
        return self._is_admin(request)

    def has_change_permission(self, request, obj=None) -> bool:
        return self._is_admin(request)

    def has_delete_permission(self, request, obj=None) -> bool:
        return self._is_admin(request)


site = AlmitaAdminSite(name="admin")

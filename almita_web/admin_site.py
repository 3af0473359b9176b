"""The Django admin, open to the admin role only, and only to those who see every project
(superusers, or admins of every project: roles.sees_every_project), since it is not scoped.

Verdicts are visible in the admin, and only admins may see other annotators' verdicts, so the
whole site is closed to every other role (not only to non-staff users).
"""
from __future__ import annotations

from functools import update_wrapper

from django.contrib import admin
from django.core.exceptions import PermissionDenied

from almita_web.roles import ADMIN, has_role, sees_every_project


class AlmitaAdminSite(admin.AdminSite):
    site_header = "Almita Studio administration"
    site_title = "Almita Studio"
    index_title = "Data and jobs"

    def has_permission(self, request) -> bool:
        return request.user.is_active and has_role(request.user, ADMIN) and sees_every_project(request.user)

    def _refuse_logged_in_non_admins(self, request) -> None:
        # Django would show its login form to a logged-in annotator, as if another login could
        # help; a role that may not enter gets the site's 403 page, like every other page.
        if request.user.is_authenticated and not self.has_permission(request):
            raise PermissionDenied("The admin site needs the role: admin")

    def admin_view(self, view, cacheable=False):
        inner = super().admin_view(view, cacheable)

        def wrapper(request, *args, **kwargs):
            self._refuse_logged_in_non_admins(request)
            return inner(request, *args, **kwargs)

        return update_wrapper(wrapper, inner)

    def login(self, request, extra_context=None):
        self._refuse_logged_in_non_admins(request)
        return super().login(request, extra_context)


class RoleModelAdmin(admin.ModelAdmin):
    """Grants the admin role full access without per-model Django permissions."""

    def _is_admin(self, request) -> bool:
        return request.user.is_active and has_role(request.user, ADMIN) and sees_every_project(request.user)

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

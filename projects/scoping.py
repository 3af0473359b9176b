"""Managers that keep queries inside the current project (the rule: projects.context).

`ProjectOwned` rows carry a `project` column; `ProjectManager` filters on it whenever a project is
set. `OwnerScopedManager` scopes a child model through its owner's column (`item__project_id`)
for children that views fetch by id (reviews, claims, results, deliveries…).

A queryset built before any project was set (a class attribute such as a DRF view's
`queryset = Model.objects.all()`, a form field's choices) is scoped again when `.all()` clones
it inside a request, which is what DRF's `get_queryset()` and Django's form fields do.
"""
from __future__ import annotations

from django.db import models

from projects.context import current_project_id, project_for_new_row


class ProjectQuerySet(models.QuerySet):
    scope_lookup = "project_id"
    _almita_scope: int | None = None

    def _clone(self):
        clone = super()._clone()
        clone._almita_scope = self._almita_scope
        clone.scope_lookup = self.scope_lookup
        return clone

    def scoped(self):
        pid = current_project_id()
        if pid is None or self._almita_scope == pid:
            return self
        clone = self.filter(**{self.scope_lookup: pid})
        clone._almita_scope = pid
        return clone

    def all(self):
        return super().all().scoped()

    def unscoped(self):
        """Every project's rows (site-wide code only: migrations, the Django admin, sweeps)."""
        return self.model._base_manager.all()


class ProjectManager(models.Manager.from_queryset(ProjectQuerySet)):
    scope_lookup = "project_id"

    def get_queryset(self):
        qs = super().get_queryset()
        qs.scope_lookup = self.scope_lookup
        return qs.scoped()


def owner_scoped_manager(lookup: str) -> ProjectManager:
    """A manager scoping a child through its owner: `owner_scoped_manager("item__project_id")`."""
    cls = type(f"ScopedBy_{lookup.replace('__', '_')}", (ProjectManager,), {"scope_lookup": lookup})
    return cls()


def project_field() -> models.ForeignKey:
    return models.ForeignKey("projects.Project", on_delete=models.PROTECT, related_name="+",
                             default=project_for_new_row)

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
from django.db.models.lookups import Exact

from projects.context import current_project_id, project_for_new_row


@models.ForeignKey.register_lookup
class InProject(Exact):
    """``project_id__inproject=pid``: the scope's equality, which SQLite must not pick an index by.

    Without statistics SQLite's planner rates ``project_id = ?`` as selective as ``job_id = ?``
    and took the project column's index for a job's rows (the partial (job, key) unique indexes
    do not qualify), walking every row of the project (EXPLAIN QUERY PLAN: ``USING INDEX
    test_project_id_order (project_id=?)`` for a job's duplicate-test check). A unary plus keeps the
    term out of index choice, as the queue's hand-written SQL does. PostgreSQL plans by its
    statistics and needs the column for the project-leading indexes: plain equality there."""

    lookup_name = "inproject"

    def get_rhs_op(self, connection, rhs):
        return connection.operators["exact"] % rhs

    def as_sql(self, compiler, connection):
        sql, params = super().as_sql(compiler, connection)
        return ("+" + sql if connection.vendor == "sqlite" else sql), params


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
        clone = self.filter(**{f"{self.scope_lookup}__inproject": pid})
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

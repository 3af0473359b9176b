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


def rows_to_write(model) -> models.QuerySet:
    """`model`'s rows in the current project, for an UPDATE or DELETE whose conditions on the row
    must hold when it is written (a compare-and-set: state, active, read_at, expiry…).

    Filtering `model.objects` (scoped through its owner: a JOIN) makes Django write
    ``UPDATE t … WHERE t.id IN (SELECT U0.id FROM t U0 JOIN owner … WHERE U0.state = …)``, and
    PostgreSQL (READ COMMITTED) re-checks only the outer WHERE after waiting for another
    transaction's row lock, never the sub-select: the compare-and-set succeeds twice. Here the
    project rule is an EXISTS on the owner's row (an owner never changes project), and
    the row's own conditions the caller adds stay in the statement's own WHERE, re-checked
    against the row as the other transaction left it. tests/sql_guard.py fails a test that writes
    the unsafe shape. Outside any project: every row, as `model.objects` is."""
    qs = model._base_manager.all()
    pid = current_project_id()
    lookup = getattr(model._default_manager, "scope_lookup", None)
    if pid is None or lookup is None:
        return qs
    fk, _, rest = lookup.partition("__")
    if not rest:  # the model's own project column: no join to avoid
        return qs.filter(**{f"{fk}__inproject": pid})
    owner = model._meta.get_field(fk).related_model
    return qs.filter(models.Exists(owner._base_manager.filter(pk=models.OuterRef(fk), **{rest: pid})))


def project_field() -> models.ForeignKey:
    return models.ForeignKey("projects.Project", on_delete=models.PROTECT, related_name="+",
                             default=project_for_new_row)

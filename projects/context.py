"""The current project: one contextvar, and the rule every query of project-owned rows follows.

The rule
--------
* Rows of the owning models (``projects.scoping.ProjectOwned``: artifacts, jobs, review items,
  guidelines, gold items, releases, audit events, agents, runs, webhooks) carry a ``project``
  foreign key. Their default manager filters on the current project whenever one is set, so a
  page, count, list, export, API endpoint or task sees only its project's rows, and an id of
  another project is a ``DoesNotExist`` (a 404 through ``get_object_or_404``).
* The current project is set
  (a) for a request by ``projects.middleware``: ``/p/<slug>/…`` names it (and sets the script
      prefix, so every ``reverse()`` and ``{% url %}`` produces links inside the project); an
      unprefixed URL works in the user's current project (last used, kept in the session, else
      their first, else Default);
  (b) for a Celery task by the header its sender attached (``projects.celery``), or explicitly
      with ``use_project(row.project_id)`` by a task that works on a job, release or run;
  (c) for a management command by ``--project`` (default: Default), see ``projects.commands``;
  (d) for the REST API exactly as for pages (``/p/<slug>/api/…``).
* With no project set (migrations, ``/projects/``, the Django admin, celery beat's sweeps across
  every project) nothing is filtered: code running there must not rely on the scope.
* A new row of an owning model gets the current project, else Default (the field's default),
  so existing code creating rows keeps working.
* Children reached only through their owner (a review through its item, a release's tests
  through the release, a delivery through its webhook…) have no column of their own; a view
  fetching one by id fetches it through its owner (``item__project``) or checks the owner.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from projects.models import Project

class ProjectById:
    """A project named by id and fetched on first use (a task's header, ``use_project(id)``).

    Read in task_prerun, the row's query opened a database connection before the worker's Django
    fixup closed it, so every task connected twice: py-spy put that prerun query at 4 of the
    worker's 65 CPU-seconds in bench/generation.py --part overhead (C 16, 768 calls). Read when
    the task asks, it shares the task's one connection.
    """

    __slots__ = ("pk", "_row")

    def __init__(self, pk: int) -> None:
        self.pk = pk
        self._row: "Project | None" = None

    def get(self) -> "Project":
        if self._row is None:
            self._row = project_by_id(self.pk)
        return self._row


_current: ContextVar["Project | ProjectById | None"] = ContextVar("almita_project", default=None)
_lock = threading.Lock()
_default_id: int | None = None
_by_slug: dict[str, tuple[float, "Project"]] = {}
SLUG_CACHE_SECONDS = 10.0


def current_project() -> "Project | None":
    project = _current.get()
    return project.get() if project.__class__ is ProjectById else project


def current_project_id() -> int | None:
    project = _current.get()
    return project.pk if project is not None else None


def set_current(project: "Project | ProjectById | None"):
    """Set the current project; returns the token `reset_current` takes."""
    return _current.set(project)


def reset_current(token) -> None:
    _current.reset(token)


@contextmanager
def use_project(project: "Project | int | None") -> Iterator["Project | ProjectById | None"]:
    """Run a block in `project` (an instance, an id, or None for no scope). An id is read from
    the database when the block first asks for the project (not at all for its id alone)."""
    if project is not None and not hasattr(project, "pk"):
        project = ProjectById(int(project))
    token = _current.set(project)
    try:
        yield project  # a ProjectById for an id: its .pk, and .get() for the row
    finally:
        _current.reset(token)


def project_by_id(pk: int) -> "Project":
    from projects.models import Project

    return Project.objects.get(pk=pk)


def default_project() -> "Project":
    """The Default project, created when missing (a fresh test database has none)."""
    global _default_id
    from django.conf import settings

    from projects.models import DEFAULT_SLUG, Project

    found = by_slug(DEFAULT_SLUG)
    if found is not None:
        _default_id = found.pk
        return found
    project, created = Project.objects.get_or_create(slug=DEFAULT_SLUG, defaults={
        "name": "Default", "claim_minutes": settings.CLAIM_MINUTES})
    if created:
        # Created inside a transaction that may yet roll back: not remembered (the migration
        # creates Default, so this happens only on a database built without migrations).
        forget_cached()
    else:
        _default_id = project.pk
    return project


def default_project_id() -> int:
    if _default_id is not None:
        return _default_id
    return default_project().pk


def current_slug() -> str:
    """The current project's slug, else Default's: a cache key part that needs no query."""
    from projects.models import DEFAULT_SLUG

    project = current_project()
    return project.slug if project is not None else DEFAULT_SLUG


def project_for_new_row() -> int:
    """The `project` field's default: the current project, else Default."""
    pk = current_project_id()
    return pk if pk is not None else default_project_id()


def project_or_default() -> "Project":
    return current_project() or default_project()


def by_slug(slug: str) -> "Project | None":
    """The project named `slug`, remembered for SLUG_CACHE_SECONDS (one query saved per request)."""
    from projects.models import Project

    now = time.monotonic()
    hit = _by_slug.get(slug)
    if hit is not None and now - hit[0] < SLUG_CACHE_SECONDS:
        return hit[1]
    project = Project.objects.filter(slug=slug).first()
    with _lock:
        if project is None:
            _by_slug.pop(slug, None)
        else:
            _by_slug[slug] = (now, project)
    return project


def remember(project: "Project") -> None:
    with _lock:
        _by_slug[project.slug] = (time.monotonic(), project)


def forget_cached() -> None:
    """Drop the remembered Default id and slugs (a project saved or deleted; a flushed test db)."""
    global _default_id
    with _lock:
        _default_id = None
        _by_slug.clear()

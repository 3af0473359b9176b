"""Celery tasks run in the project of whoever sent them.

The sender's current project travels in the message's `almita_project` header; the worker sets
it around the task. A message without it (celery beat's sweeps, messages sent outside any
project) runs with no project set: such tasks work across projects and set the project of each
job, release or run they touch with `use_project` (see projects.context).
"""
from __future__ import annotations

from celery import signals

from projects import context

HEADER = "almita_project"
_tokens: dict[str, object] = {}


@signals.before_task_publish.connect
def _attach_project(headers=None, **_kwargs) -> None:
    pk = context.current_project_id()
    if headers is not None and pk is not None and HEADER not in headers:
        headers[HEADER] = pk


@signals.task_prerun.connect
def _enter_project(task_id=None, task=None, **_kwargs) -> None:
    pk = getattr(task.request, HEADER, None) if task is not None else None
    if pk is None or task_id is None:
        return
    from projects.models import Project

    project = Project.objects.filter(pk=pk).first()
    if project is not None:
        _tokens[task_id] = context.set_current(project)


@signals.task_postrun.connect
def _leave_project(task_id=None, **_kwargs) -> None:
    token = _tokens.pop(task_id, None)
    if token is not None:
        context.reset_current(token)

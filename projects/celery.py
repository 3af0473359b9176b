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
    # Fetched when the task first reads it (context.ProjectById says why not here).
    _tokens[task_id] = context.set_current(context.ProjectById(int(pk)))


@signals.task_postrun.connect
def _leave_project(task_id=None, **_kwargs) -> None:
    token = _tokens.pop(task_id, None)
    if token is not None:
        context.reset_current(token)


def in_project_of(model_label: str, arg: str, through: str = "project_id"):
    """Task decorator: run in the project of the row whose id is the task's `arg` (a job, a run,
    a delivery through its webhook). A message sent from another project than the row's is refused
    (logged, nothing done): a task never works across projects by accident."""
    import functools
    import inspect
    import logging

    def decorator(fn):
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            from django.apps import apps

            pk = signature.bind(*args, **kwargs).arguments[arg]
            model = apps.get_model(model_label)
            pid = model._base_manager.filter(pk=pk).values_list(through, flat=True).first()
            if pid is None:  # gone (or unscoped): the task's own lookup decides
                return fn(*args, **kwargs)
            current = context.current_project_id()
            if current is not None and current != pid:
                logging.getLogger(__name__).warning("%s: %s %s is not in project %s; refused",
                                                    fn.__name__, model_label, pk, current)
                return None
            if current is not None:  # the sender's header set it (read fresh when the task asks)
                return fn(*args, **kwargs)
            with context.use_project(pid):
                return fn(*args, **kwargs)

        return wrapped

    return decorator

"""The worker's database connections follow Django's CONN_MAX_AGE and health checks (issue #29).

Celery's Django fixup closes every connection before and after each task unless a reuse count is
set; almita_web.celery sets one and applies Django's own rule (close_old_connections) around each
task instead. The fixup is driven here as the worker drives it."""
from __future__ import annotations

import time

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db(transaction=True)


class _Request:
    is_eager = False


class _Task:
    request = _Request()


def _one_task() -> None:
    from celery import signals
    from celery.fixups.django import DjangoWorkerFixup

    from almita_web.celery import app

    fixup = DjangoWorkerFixup(app)
    fixup.on_task_prerun(sender=_Task())
    signals.task_prerun.send(sender=_Task(), task_id="t", task=_Task())
    connection.ensure_connection()
    signals.task_postrun.send(sender=_Task(), task_id="t", task=_Task())
    fixup.on_task_postrun(sender=_Task())


def test_a_connection_is_kept_across_tasks_until_django_says_it_is_old():
    from celery.fixups.django import DjangoWorkerFixup

    from almita_web.celery import app

    assert DjangoWorkerFixup(app).db_reuse_max >= 10**9
    assert connection.settings_dict["CONN_MAX_AGE"] > 0
    connection.ensure_connection()
    raw = connection.connection
    for _ in range(5):
        _one_task()
        assert connection.connection is raw  # the same connection: not opened again per task
    if connection.vendor == "sqlite":
        return  # the suite's in-memory SQLite database is never closed by Django; SQLite is always "usable"
    connection.close_at = time.monotonic() - 1  # past CONN_MAX_AGE
    _one_task()
    assert connection.connection is not raw  # closed after the task and opened by the next one
    raw = connection.connection
    connection.errors_occurred = True
    connection.connection.close()  # a broken connection is found by Django's check and replaced
    _one_task()
    assert connection.connection is not raw


def test_the_worker_builds_the_llm_client_before_any_item_asks(settings):
    from generation.llm import providers
    from generation.tasks import _warm_llm_client

    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    settings.OPENAI_API_KEY = "sk-warm-test-key-0000000000"
    providers._clients.clear()
    _warm_llm_client()
    client = providers.client_for(settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY, settings.OPENAI_TIMEOUT)
    assert len(providers._clients) == 1 and list(providers._clients.values()) == [client]

"""How tasks enter their project (issue #29's generation overhead, issue #30's rule).

* The sender's header names the project by id; the row is read when the task first asks for it, so
  the worker's per-task connection handling is not made to open a connection twice.
* ``in_project_of`` still refuses a row of another project and runs one of its own project in it.
* On SQLite the scope's equality is kept out of index choice (a unary plus), so a job's rows are
  found by the job's index, not by walking the project's; on PostgreSQL it stays plain.
"""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from projects import context
from projects.celery import HEADER, _enter_project, _leave_project, in_project_of


class _Request:
    pass


class _Task:
    def __init__(self, pk: int | None) -> None:
        self.request = _Request()
        if pk is not None:
            setattr(self.request, HEADER, pk)


def test_a_header_sets_the_project_without_a_query_and_reads_it_on_first_use(world):
    task = _Task(world.b.pk)
    with CaptureQueriesContext(connection) as before:
        _enter_project(task_id="t1", task=task)
        assert context.current_project_id() == world.b.pk
    assert len(before) == 0
    try:
        with CaptureQueriesContext(connection) as first:
            assert context.current_project().slug == "shipping"
            assert context.current_project().slug == "shipping"  # read once
        assert len(first) == 1
    finally:
        _leave_project(task_id="t1")
    assert context.current_project_id() is None


def test_in_project_of_refuses_another_projects_row_and_runs_its_own_in_it(world):
    from generation.models import GenerationJob

    with context.use_project(world.b):
        job_b = GenerationJob.objects.create(name="b job", config={})
    seen: list = []

    @in_project_of("generation.GenerationJob", "job_id")
    def task(job_id: int) -> str:
        seen.append(context.current_project().slug)
        return "ran"

    assert task(job_b.pk) == "ran" and seen == ["shipping"]  # no header: the job's project
    with context.use_project(world.a.pk):  # a header naming A: refused, nothing done
        assert task(job_b.pk) is None
    assert seen == ["shipping"]
    with context.use_project(world.b.pk):  # a header naming B: the row's owner, then B's row
        with CaptureQueriesContext(connection) as queries:
            assert task(job_b.pk) == "ran"
        assert len(queries) == 2  # the job's project id, and the project row when the task asked
    assert seen == ["shipping", "shipping"]


@pytest.mark.django_db
def test_a_jobs_rows_in_a_project_are_found_by_the_jobs_index_on_sqlite(world):
    from generation.models import Conversation, Test

    with context.use_project(world.a):
        queries = [Test.objects.filter(job_id=1, fingerprint="f").exclude(key="k"),
                   Conversation.objects.filter(job_id=1, key="k")]
        sql = [str(q.query) for q in queries]
        plans = []
        for q in queries:
            text, params = q.query.sql_with_params()
            with connection.cursor() as cursor:
                cursor.execute(("EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN ") + text, params)
                plans.append(" ".join(str(r) for r in cursor.fetchall()))
    for text in sql:
        assert "project_id" in text  # still scoped
    if connection.vendor == "sqlite":
        assert all(re.search(r'\+"\w+"\."project_id"', s.split("WHERE", 1)[1]) for s in sql), sql
        assert all("job_id" in p and "project_id" not in p for p in plans), plans
    else:
        assert all("+" not in s.split("WHERE", 1)[1] for s in sql), sql

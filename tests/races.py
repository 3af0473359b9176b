"""Deterministic two-transaction races on PostgreSQL (READ COMMITTED), for compare-and-set tests.

`race(project_id, first, second)`: `first()` runs in a transaction that stays open until
`second()`, in its own thread and connection, is seen waiting for a row lock in pg_stat_activity;
then `first`'s transaction commits and `second` finishes. Both run in the project, as a request or
a worker does. The same design as tests/evaluation/test_claim_race.py.
"""
from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections, transaction

from projects.context import use_project


@pytest.fixture
def postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("the race is PostgreSQL's READ COMMITTED re-check; SQLite serializes writers")


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def wait_until_waiting_for_a_lock(pid_box: list, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pid_box:
            with connection.cursor() as cursor:
                cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid_box[0]])
                row = cursor.fetchone()
            if row and row[0] == "Lock":
                return
        time.sleep(0.01)
    raise AssertionError("the second statement never waited for the row lock")


def race(project_id: int, first, second) -> tuple[object, object]:
    """Returns (first(), second()); re-raises either one's exception in the test thread."""
    out: dict[str, object] = {}
    pid_box: list[int] = []
    holding, release = threading.Event(), threading.Event()

    def run_first() -> None:
        try:
            with use_project(project_id), transaction.atomic():
                out["first"] = first()
                holding.set()
                assert release.wait(30), "never released"
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test thread
            out["first_error"] = exc
            holding.set()
        finally:
            connections.close_all()

    def run_second() -> None:
        try:
            pid_box.append(backend_pid())
            with use_project(project_id):
                out["second"] = second()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test thread
            out["second_error"] = exc
        finally:
            connections.close_all()

    a = threading.Thread(target=run_first)
    a.start()
    assert holding.wait(30)
    if "first_error" in out:
        a.join(30)
        raise out["first_error"]
    b = threading.Thread(target=run_second)
    b.start()
    try:
        wait_until_waiting_for_a_lock(pid_box)
    finally:
        release.set()
        a.join(30)
        b.join(30)
    for key in ("first_error", "second_error"):
        if key in out:
            raise out[key]
    return out["first"], out["second"]

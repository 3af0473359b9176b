"""almita_web.postgres: the per-request health check (SELECT 1) is skipped for a connection that
finished a request moments ago, kept for one idle longer, and a connection lost inside that
window costs one failed request, not more."""
import time

import pytest
from django.db import OperationalError, connection, connections

from almita_web.postgres import base as pg_base

pytestmark = [pytest.mark.skipif("connection.vendor != 'postgresql'"), pytest.mark.django_db]


@pytest.fixture
def wrapper():
    """A second connection to the test database, driven as a server thread's connection is."""
    w = connections.create_connection("default")
    assert isinstance(w, pg_base.DatabaseWrapper) and w.settings_dict["CONN_HEALTH_CHECKS"]
    w.settings_dict = {**w.settings_dict, "CONN_MAX_AGE": 60}  # (a copy: the dict is the default connection's)
    checks = []
    real = w.is_usable
    w.is_usable = lambda: checks.append(1) or real()
    w.checks = checks
    yield w
    w.close()


def request(w, sql="SELECT 42"):
    """What Django does around one request that runs a query: the request signals' call at the
    start and at the end, and the query in between."""
    w.close_if_unusable_or_obsolete()
    try:
        with w.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchone()[0]
    finally:
        w.close_if_unusable_or_obsolete()


def terminate(w) -> None:
    pid = w.connection.info.backend_pid
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:  # wait until the server has really dropped it
        with connection.cursor() as cursor:
            # The statistics views are a snapshot taken once per transaction (and the test runs
            # in one): drop it, or the backend looks alive until the transaction ends.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
            if cursor.fetchone()[0] == 0:
                return
        time.sleep(0.01)
    raise AssertionError(f"backend {pid} still there")


def test_a_connection_used_a_moment_ago_is_not_checked(wrapper):
    assert request(wrapper) == 42  # connects (a new connection needs no check)
    for _ in range(5):
        assert request(wrapper) == 42
    assert wrapper.checks == []


def test_a_connection_idle_for_longer_is_checked_on_each_request(wrapper, monkeypatch):
    request(wrapper)
    monkeypatch.setattr(pg_base, "CHECK_AFTER", 0.0)
    for _ in range(3):
        request(wrapper)
    assert len(wrapper.checks) == 3


def test_a_request_starting_does_not_count_as_use(wrapper):
    request(wrapper)
    wrapper._released_at = time.monotonic() - pg_base.CHECK_AFTER - 1  # idle for longer than the delay
    wrapper.close_if_unusable_or_obsolete()  # a request starts ...
    with wrapper.cursor() as cursor:  # ... and its first query still asks first
        cursor.execute("SELECT 1")
    assert len(wrapper.checks) == 1


def test_a_dropped_idle_connection_is_replaced_before_the_query(wrapper):
    request(wrapper)
    old_pid = wrapper.connection.info.backend_pid
    terminate(wrapper)
    wrapper._released_at = time.monotonic() - pg_base.CHECK_AFTER - 1
    assert request(wrapper) == 42  # the check found it dead; the query ran on a new connection
    assert wrapper.connection.info.backend_pid != old_pid


def test_a_connection_dropped_inside_the_window_fails_one_request_only(wrapper):
    request(wrapper)
    terminate(wrapper)
    with pytest.raises(OperationalError):
        request(wrapper)  # not checked: used a moment ago
    assert wrapper.connection is None  # found unusable when that request finished, and closed
    assert request(wrapper) == 42  # the next request reconnects

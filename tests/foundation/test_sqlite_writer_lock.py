"""almita_web.sqlite: the outermost transaction holds the writer lock file until it ends."""
import fcntl
import threading
import time

import pytest
from django.db import connection, transaction


@pytest.mark.django_db(transaction=True)
def test_writer_lock_is_held_for_the_transaction_and_released_after():
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only")
    connection.ensure_connection()
    path = f"{connection.settings_dict['NAME']}-writer.lock"

    def free() -> bool:
        with open(path, "ab") as other:  # another open file: conflicts like another connection
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            fcntl.flock(other, fcntl.LOCK_UN)
            return True

    assert free()
    with transaction.atomic():
        assert not free()
        with transaction.atomic():  # a savepoint takes nothing more
            assert not free()
        assert not free()
    assert free()
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        1 / 0
    assert free()  # released on rollback too


@pytest.mark.django_db(transaction=True)
def test_a_second_writer_waits_for_the_first_and_starts_when_it_commits():
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only")
    from django.contrib.auth.models import Group
    from django.db import connections

    order: list[str] = []
    started = threading.Event()

    def second():
        started.wait(5)
        with transaction.atomic():
            order.append("second")
            Group.objects.create(name="second")
        connections.close_all()

    th = threading.Thread(target=second)
    th.start()
    with transaction.atomic():
        Group.objects.create(name="first")
        started.set()
        time.sleep(0.2)
        order.append("first")
    th.join(10)
    assert order == ["first", "second"]
    assert set(Group.objects.values_list("name", flat=True)) >= {"first", "second"}


@pytest.mark.django_db(transaction=True)
def test_a_writer_gives_up_after_the_busy_timeout(monkeypatch):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only")
    from django.db import OperationalError

    connection.ensure_connection()
    monkeypatch.setitem(connection.settings_dict["OPTIONS"], "timeout", 0.1)
    with open(f"{connection.settings_dict['NAME']}-writer.lock", "ab") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)  # another writer that does not let go
        start = time.monotonic()
        with pytest.raises(OperationalError, match="database is locked"), transaction.atomic():
            pass
        assert 0.1 <= time.monotonic() - start < 2
    with transaction.atomic():  # free again
        pass


@pytest.mark.django_db(transaction=True)
def test_a_thread_of_the_same_process_waits_on_the_process_lock_and_times_out_there(monkeypatch):
    """Threads of one process queue on a threading.Lock (no polling); its wait obeys the busy timeout."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only")
    from django.db import OperationalError, connections

    holding, done = threading.Event(), threading.Event()
    outcome: list[str] = []

    def holder():
        with transaction.atomic():
            holding.set()
            done.wait(5)
        connections.close_all()

    def waiter():
        holding.wait(5)
        connections["default"].ensure_connection()
        monkeypatch.setitem(connections["default"].settings_dict["OPTIONS"], "timeout", 0.1)
        start = time.monotonic()
        try:
            with transaction.atomic():
                outcome.append("entered")
        except OperationalError as exc:
            outcome.append(f"{exc} after {time.monotonic() - start:.2f}")
        finally:
            connections.close_all()

    th1, th2 = threading.Thread(target=holder), threading.Thread(target=waiter)
    th1.start()
    th2.start()
    th2.join(10)
    done.set()
    th1.join(10)
    assert len(outcome) == 1 and outcome[0].startswith("database is locked"), outcome
    assert 0.1 <= float(outcome[0].rsplit(" ", 1)[1]) < 2
    with transaction.atomic():  # both locks free again
        pass

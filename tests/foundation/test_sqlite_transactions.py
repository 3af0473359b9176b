"""SQLite with Django's transaction_mode="IMMEDIATE": every atomic block takes the write lock up
front, so a second writer waits (SQLite's busy handler, OPTIONS["timeout"]) and starts after the first commits."""
import threading
import time

import pytest
from django.db import connection, transaction


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

"""Threads started at one moment while a monitor checks an invariant every 20 ms until they end
(the concurrency tests of claims and assignments)."""
from __future__ import annotations

import threading
from typing import Any, Callable

from django.db import connections


def run_watched(targets: list[Callable[[], None]], check: Callable[[], Any]) -> list[Any]:
    """Run each target in its own thread, all released together; returns every truthy `check()`
    seen while they ran. Each thread closes its database connections when it ends."""
    start = threading.Barrier(len(targets) + 1)
    done = threading.Event()
    found: list[Any] = []

    def in_thread(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                start.wait()
                fn()
            finally:
                connections.close_all()
        return run

    def monitor() -> None:
        while not done.is_set():
            if bad := check():
                found.append(bad)
            done.wait(0.02)

    threads = [threading.Thread(target=in_thread(t)) for t in targets]
    watcher = threading.Thread(target=in_thread(monitor))
    for t in threads + [watcher]:
        t.start()
    for t in threads:
        t.join(300)
    done.set()
    watcher.join(30)
    return found

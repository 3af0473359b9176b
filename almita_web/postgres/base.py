"""Django's PostgreSQL backend, with the per-request health check skipped for a connection in use.

With CONN_HEALTH_CHECKS, Django sends ``SELECT 1`` before the first query of every request that
reuses a connection: a whole round trip to the server on each request, three per verdict on the
review path (claim, page, submit), where the waits for the database are most of a request's
time when the machine is busy. As PgBouncer does (``server_check_delay``), a connection that
finished a request less than ``CHECK_AFTER`` seconds ago is taken to be alive; one idle for
longer is checked, and replaced when the check fails, as before.

What that gives up: if the server drops a connection within those seconds (a restart, an
administrator terminating it), the next request on that thread fails once with a database
error; Django then finds the connection unusable when that request finishes and closes it, so
the request after that reconnects (tests/foundation/test_postgres_backend.py shows both).
"""
from __future__ import annotations

import time

from django.db.backends.postgresql import base

CHECK_AFTER = 5.0  # seconds


class DatabaseWrapper(base.DatabaseWrapper):
    _released_at = float("-inf")

    def close_if_health_check_failed(self) -> None:
        if (self.connection is not None and self.health_check_enabled and not self.health_check_done
                and time.monotonic() - self._released_at < CHECK_AFTER):
            self.health_check_done = True  # used a moment ago: no round trip to ask
            return
        super().close_if_health_check_failed()

    def close_if_unusable_or_obsolete(self) -> None:
        # Called when a request starts and when it finishes (Django's request signals). The
        # health check is marked done only once a request has used the connection: then this
        # call ends a request that used it, and the time is noted (if the connection survives).
        used = self.health_check_done
        super().close_if_unusable_or_obsolete()
        if self.connection is None:
            self._released_at = float("-inf")
        elif used:
            self._released_at = time.monotonic()

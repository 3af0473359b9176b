"""The production web server: granian serving ``almita_web.production:application``.

    python -m almita_web.serve        # what the Dockerfile, docker-compose and bench/review_http.py run

granian (https://github.com/emmett-framework/granian) reads and writes HTTP in Rust threads that
do not hold Python's GIL; only the application itself runs in Python. It replaced gunicorn's
threaded workers, whose request parsing, thread-pool hand-offs and event loop are Python: about a
fifth of a worker's GIL-holding time under bench/review_http.py (py-spy). Measured with
bench/review_http.py, interleaved runs on one machine (8 annotators, no think time, 2 cores):

* Postgres, SVG cached, three pairs: server CPU per verdict 7.2-7.6 ms against 8.3-8.7 ms under
  gunicorn, claim+page p95 34.1-37.2 ms against 41.7-43.6 ms;
* SQLite, first view: server CPU 6.2-7.5 ms against 7.8-8.2 ms, claim+page p95 30.3-35.7 ms
  against 43.3-45.0 ms.

How many processes and threads depends on the database (DATABASE_URL, as the app reads it):

* Postgres: one process per core, four threads each, so that a request waiting on the database
  does not idle a core (2 x 4 against 3 x 3 and 4 x 2: claim+page p95 29.9-37.2 ms against
  35.7-39.4 and 43.3-50.6);
* SQLite: two processes per core, two threads each. SQLite has one writer at a time; with fewer
  threads per process, a thread holding the write lock waits less for its process's GIL.

Environment: WEB_WORKERS, WEB_THREADS, WEB_BIND (host:port, default 0.0.0.0:8000),
WEB_ACCESS_LOG=1, and the one almita_web/production.py reads
(WEB_SWITCH_INTERVAL).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

TARGET = "almita_web.production:application"


def options(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The server's settings for this environment (a pure function: tests call it)."""
    env = os.environ if environ is None else environ
    cores = os.cpu_count() or 1
    sqlite = not env.get("DATABASE_URL", "").lower().startswith(("postgres", "pgsql"))
    host, _, port = (env.get("WEB_BIND") or "0.0.0.0:8000").rpartition(":")
    if not host or not port.isdigit():
        raise SystemExit(f"WEB_BIND must be host:port, not {env.get('WEB_BIND')!r}")
    return {
        "address": host.strip("[]"),
        "port": int(port),
        "workers": int(env.get("WEB_WORKERS") or (max(4, 2 * cores) if sqlite else max(2, cores))),
        "blocking_threads": int(env.get("WEB_THREADS") or (2 if sqlite else 4)),
        "log_access": env.get("WEB_ACCESS_LOG", "") == "1",
    }


def main() -> None:
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from granian import Granian
    from granian.constants import HTTPModes, Interfaces

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")
    try:
        settings.SECRET_KEY  # noqa: B018 (reads the settings: a bad environment stops here, once, with its message)
    except ImproperlyConfigured as exc:
        raise SystemExit(f"almita_web.serve: {exc}") from None
    opts = options()
    Granian(
        TARGET,
        interface=Interfaces.WSGI,
        http=HTTPModes.http1,  # Connection: close (production.py) is an HTTP/1.1 header
        websockets=False,
        # A thread keeps its database connection (CONN_MAX_AGE): do not retire idle ones early.
        blocking_threads_idle_timeout=600,
        respawn_failed_workers=True,  # a worker that dies is replaced, as gunicorn's arbiter did
        workers_kill_timeout=20,  # seconds a stopping worker gets to finish its requests
        **opts,
    ).serve()


if __name__ == "__main__":
    main()

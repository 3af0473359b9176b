"""The production web server's settings (gunicorn reads ./gunicorn.conf.py from its working directory).

docker-compose, the Dockerfile and bench/review_http.py all start gunicorn with this file, so
the configuration measured is the one deployed. Chosen from bench/review_http.py (8 annotators
with no think time on a 2-core machine, Postgres and SQLite):

* threaded workers (gthread) keep each browser's connection open between requests (keep-alive):
  a sync worker closes it after every response, and holds a whole process per slow client;
* one process per core (the GIL lets one process use one core; more processes measured slower:
  they contend for the same cores), four threads each, so a request waiting on the database or
  on Graphviz does not idle a core;
* Django keeps one database connection per thread (CONN_MAX_AGE in almita_web/env.py).

WEB_WORKERS, WEB_THREADS and WEB_BIND override the defaults.
"""
import os

bind = os.environ.get("WEB_BIND", "0.0.0.0:8000")
worker_class = "gthread"
workers = int(os.environ.get("WEB_WORKERS", str(max(2, os.cpu_count() or 1))))  # one per core
threads = int(os.environ.get("WEB_THREADS", "4"))
keepalive = 75  # seconds an idle connection stays open (longer than browsers keep theirs)
timeout = 60  # a request still running after this long has its worker restarted
graceful_timeout = 20
accesslog = "-" if os.environ.get("WEB_ACCESS_LOG", "") == "1" else None


def post_fork(server, worker):
    """Hand the GIL between a worker's threads every 1 ms instead of Python's 5 ms: a thread that
    holds SQLite's write lock and waits for the GIL keeps every other writer waiting. Measured
    with bench/review_http.py on SQLite (quiet machine, three runs each, interleaved): submit p95
    69-78 ms instead of 79-95 ms, the same CPU per verdict and throughput; no clear change on
    Postgres. WEB_SWITCH_INTERVAL (seconds) overrides it."""
    import sys

    sys.setswitchinterval(float(os.environ.get("WEB_SWITCH_INTERVAL") or "0.001"))


def post_worker_init(worker):
    """Import the URL configuration (every view module) now rather than on the first request,
    then move everything the start-up made out of the garbage collector's way (gc.freeze): a
    worker holds about 175,000 objects once its views are imported, and a full collection that
    walks them all took about 45 ms, stalling every thread of the worker; after the freeze,
    the first full collection under bench/review_http.py walked about 11,000 (11 ms)."""
    import gc

    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 (imports every view module)
    gc.collect()
    gc.freeze()

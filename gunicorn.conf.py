"""The production web server's settings (gunicorn reads ./gunicorn.conf.py from its working directory).

docker-compose, the Dockerfile and bench/review_http.py all start gunicorn with this file, so
the configuration measured is the one deployed. Chosen from bench/review_http.py (8 annotators
with no think time on a 2-core machine, Postgres and SQLite):

* threaded workers (gthread) keep each browser's connection open between requests (keep-alive):
  a sync worker closes it after every response, and holds a whole process per slow client;
* how many processes and threads depends on the database (DATABASE_URL, as the app reads it):
  - Postgres: one process per core, four threads each, so a request waiting on the database
    does not idle a core (2 x 4 beat 4 x 2 and 8 x 1 in two interleaved series each, cached and
    first-view SVG: claim+page p95 41-45 ms cached against 58-72);
  - SQLite: two processes per core, two threads each. The database has one writer at a time,
    and a thread holding the write lock gives up its process's GIL inside every SQLite call,
    then waits for it behind its sibling threads while every other writer waits for it; with
    fewer threads per process the lock is held for less long. 4 x 2 and 8 x 1 met every target
    in both series (claim+page p95 36-46 ms, submit 27-32 ms, first-view SVG included), 2 x 4
    missed the first-view one in both (63-64 ms);
* Django keeps one database connection per thread (CONN_MAX_AGE in almita_web/env.py);
* a kept-alive connection is answered with "Connection: close" at its 20th request (like nginx's
  keepalive_requests), see pre_request.

WEB_WORKERS, WEB_THREADS, WEB_KEEPALIVE_REQUESTS and WEB_BIND override the defaults.
"""
import os

_cores = os.cpu_count() or 1
_sqlite = not os.environ.get("DATABASE_URL", "").lower().startswith(("postgres", "pgsql"))

bind = os.environ.get("WEB_BIND", "0.0.0.0:8000")
worker_class = "gthread"
workers = int(os.environ.get("WEB_WORKERS") or (max(4, 2 * _cores) if _sqlite else max(2, _cores)))
threads = int(os.environ.get("WEB_THREADS") or (2 if _sqlite else 4))
keepalive = 75  # seconds an idle connection stays open (longer than browsers keep theirs)
timeout = 60  # a request still running after this long has its worker restarted
graceful_timeout = 20
# Requests a kept-alive connection serves before the server closes it (0: no limit).
keepalive_requests = int(os.environ.get("WEB_KEEPALIVE_REQUESTS") or 20)
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


def pre_request(worker, req):
    """Close a kept-alive connection after its ``keepalive_requests``-th request (the response says
    "Connection: close"; browsers and http clients open a new one for the next request).

    A keep-alive connection stays with the worker process that accepted it, and one process runs
    Python on one core at a time (the GIL). When the annotators' connections are spread unevenly
    (6 on one process, 2 on the other, as seen with bench/review_http.py's 8 clients on 2
    processes), the busy process queues requests on its one core while the other core idles:
    the machine was 68-82 % busy at 60-90 verdicts/s, and the spread, hence the run's p95, was a
    matter of chance. A new connection is accepted by whichever process reaches it first, which is
    seldom the busiest, so a bounded connection life keeps the load spread: the machine was 88-94 %
    busy in nine runs with a limit of 10, 20 or 50 requests, at 98-116 verdicts/s. Reconnecting
    costs a TCP handshake every 20 requests."""
    if keepalive_requests and req.req_number % keepalive_requests == 0:
        req.must_close = True

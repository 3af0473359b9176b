"""The WSGI application as the production server runs it (almita_web/serve.py), set up once per
worker process when granian imports it:

* the thread switch interval is 1 ms instead of Python's 5 ms (WEB_SWITCH_INTERVAL overrides): a
  thread that holds SQLite's write lock and waits for its process's GIL keeps every other writer
  waiting (bench/review_http.py on SQLite under the threaded server this replaced: submit p95
  69-78 ms instead of 79-95 ms, the same CPU per verdict);
* every view module is imported now rather than on the first request, and everything the
  start-up made is moved out of the garbage collector's way (``gc.freeze``): a worker holds about
  175,000 objects once its views are imported, and a full collection walking them all took about
  45 ms, stalling every thread of the worker;
* the process's own environment is not passed to Django: granian, like wsgiref, starts each
  request's environ from ``os.environ``, which holds SECRET_KEY and DATABASE_URL, and Django would
  keep them in ``request.META`` (and in any error report made from it);
* a kept-alive connection is closed after 1 in WEB_KEEPALIVE_REQUESTS responses on average
  (default 20; 0 never closes): the response says ``Connection: close`` and the browser opens a
  new connection for its next request. A connection stays with the worker process that accepted
  it, and one process runs Python on one core at a time, so connections spread unevenly over the
  processes (6 on one, 2 on the other, as seen with bench/review_http.py's 8 clients) queue on one
  core while another idles. A new connection goes to whichever process accepts it first, seldom
  the busiest. WSGI gives no connection identity, so each response closes its connection with
  probability 1/N: a connection serves N requests on average, whichever process holds it.
  (``Connection`` is a hop-by-hop header that PEP 3333 keeps from applications; granian honours it,
  wsgiref would refuse it, which is why it is added here and not in a Django middleware.)
"""
from __future__ import annotations

import gc
import os
import random
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")
sys.setswitchinterval(float(os.environ.get("WEB_SWITCH_INTERVAL") or "0.001"))

from django.urls import get_resolver  # noqa: E402  (after the settings module is chosen)

from almita_web.wsgi import application as django_application  # noqa: E402

KEEPALIVE_REQUESTS = int(os.environ.get("WEB_KEEPALIVE_REQUESTS") or 20)
# Request keys a server sets (PEP 3333 and CGI); everything else in os.environ is the process's.
_REQUEST_KEYS = frozenset({
    "REQUEST_METHOD", "SCRIPT_NAME", "PATH_INFO", "QUERY_STRING", "CONTENT_TYPE", "CONTENT_LENGTH",
    "SERVER_NAME", "SERVER_PORT", "SERVER_PROTOCOL", "SERVER_SOFTWARE", "GATEWAY_INTERFACE",
    "REMOTE_ADDR", "REMOTE_HOST", "REMOTE_PORT", "REQUEST_URI", "RAW_URI",
})
_PROCESS_KEYS = tuple(k for k in os.environ if k not in _REQUEST_KEYS and not k.startswith(("HTTP_", "wsgi.")))
_draw = random.Random().random


def application(environ, start_response):
    for key in _PROCESS_KEYS:
        environ.pop(key, None)
    if KEEPALIVE_REQUESTS and _draw() * KEEPALIVE_REQUESTS < 1:
        def closing(status, headers, exc_info=None):
            return start_response(status, [*headers, ("Connection", "close")], exc_info)

        return django_application(environ, closing)
    return django_application(environ, start_response)


get_resolver().url_patterns  # noqa: B018 (imports every view module)
gc.collect()
gc.freeze()

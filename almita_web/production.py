"""The WSGI application as the production server runs it (almita_web/serve.py), set up once per
worker process when granian imports it.

* The process's own environment is not passed to Django: granian, like wsgiref, starts each
  request's environ from ``os.environ``, which holds SECRET_KEY and DATABASE_URL, and Django would
  keep them in ``request.META`` (and in any error report made from it).
* Every view module is imported now rather than on the first request, and what start-up made is
  moved out of the garbage collector's way (``gc.freeze``), and the thread switch interval is 1 ms
  (WEB_SWITCH_INTERVAL overrides). Measured reason (bench/review_http.py, 8 clients, SVG cached,
  one run each side by side on this 2-core machine, 2026-11-26): without these three lines submit
  p95 was 105.7 ms on PostgreSQL and 110.0 ms on SQLite, over the 100 ms floor of issue #29; a worker
  holds about 175,000 objects once its views are imported, and a full collection walking them all
  stalls every thread of the worker, while a thread holding SQLite's write lock waits for the GIL.
"""
from __future__ import annotations

import gc
import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")
sys.setswitchinterval(float(os.environ.get("WEB_SWITCH_INTERVAL") or "0.001"))

from django.urls import get_resolver  # noqa: E402  (after the settings module is chosen)

from almita_web.wsgi import application as django_application  # noqa: E402

# Request keys a server sets (PEP 3333 and CGI); everything else in os.environ is the process's.
_REQUEST_KEYS = frozenset({
    "REQUEST_METHOD", "SCRIPT_NAME", "PATH_INFO", "QUERY_STRING", "CONTENT_TYPE", "CONTENT_LENGTH",
    "SERVER_NAME", "SERVER_PORT", "SERVER_PROTOCOL", "SERVER_SOFTWARE", "GATEWAY_INTERFACE",
    "REMOTE_ADDR", "REMOTE_HOST", "REMOTE_PORT", "REQUEST_URI", "RAW_URI",
})
_PROCESS_KEYS = tuple(k for k in os.environ if k not in _REQUEST_KEYS and not k.startswith(("HTTP_", "wsgi.")))


def application(environ, start_response):
    for key in _PROCESS_KEYS:
        environ.pop(key, None)
    return django_application(environ, start_response)


get_resolver().url_patterns  # noqa: B018 (imports every view module)
gc.collect()
gc.freeze()

"""The WSGI application as the production server runs it (almita_web/serve.py): Django's, with the
process's own environment kept out of each request.

granian, like wsgiref, starts each request's environ from ``os.environ``, which holds SECRET_KEY
and DATABASE_URL, and Django would keep them in ``request.META`` (and in any error report made
from it); the keys a server sets for a request stay, the process's are dropped.
"""
from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")

from almita_web.wsgi import application as django_application  # noqa: E402  (after the settings module is chosen)

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

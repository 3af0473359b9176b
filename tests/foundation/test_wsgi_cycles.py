"""almita_web.wsgi: the served application's requests break their reference cycles once the
response is closed, so a finished request and what it reached are freed by reference counting,
not left to the cyclic garbage collector (which holds the worker's GIL while it runs)."""
import gc

import pytest
from django.core import signals
from django.core.handlers.wsgi import WSGIRequest
from django.db import close_old_connections
from django.test.client import RequestFactory

from almita_web import wsgi
from tests.conftest import PASSWORD


def _serve(cookie: str, path: str) -> tuple[str, bytes]:
    """One request through the WSGI application, as a server makes it (close() at the end)."""
    environ = RequestFactory()._base_environ(PATH_INFO=path, REQUEST_METHOD="GET", HTTP_COOKIE=cookie)
    status = []
    response = wsgi.application(environ, lambda s, headers, exc_info=None: status.append(s))
    try:
        body = b"".join(response)
    finally:
        response.close()
    return status[0], body


def _cyclic_garbage(cookie: str, path: str, n: int) -> int:
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(n):
            status, body = _serve(cookie, path)
            assert status.startswith("200") and b"Review" in body, status
        gc.collect()
        return len(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.django_db
def test_a_served_request_leaves_no_cyclic_garbage(client, personas, monkeypatch):
    # As the test client does: the request signals must not close the test's connection.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        client.login(username=personas["annotator"].username, password=PASSWORD)
        cookie = "; ".join(f"{k}={v.value}" for k, v in client.cookies.items())
        _serve(cookie, "/curation/queue/")  # warm-up: imports, template compilation, caches
        ours = _cyclic_garbage(cookie, "/curation/queue/", 5)
        monkeypatch.setattr(wsgi.application, "request_class", WSGIRequest)
        django_class = _cyclic_garbage(cookie, "/curation/queue/", 5)
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)
    # Django's own request class leaves every finished request to the collector (the control:
    # 65 objects a request here). What is left with ours is Django's own: a template context
    # and its dicts, and the ORM compiler's recursive helper (16 a request here).
    assert django_class >= 5 * 50, django_class
    assert ours <= django_class / 3, (ours, django_class)

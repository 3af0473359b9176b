"""The WSGI application the web server serves (through almita_web/production.py), with requests that drop their own
reference cycles once the response has gone out.

Django's request object is in reference cycles for its whole life: ``request.user`` is a lazy
object whose loader closes over the request, ``request.auser`` a partial of it, the messages
storage holds the request. So a finished request, and everything reachable from it (headers,
session, user, the model instances the view loaded), is freed not when the response is sent but
by the cyclic garbage collector, which holds the worker's GIL while it looks (under
bench/review_http.py a worker ran a young-generation collection every ~12 requests, 0.5 ms each,
and an older-generation one every ~130, 3-4 ms each, stalling its other threads). On the queue
page that is 65 objects a request; with this class 16 are left, all Django's own (a template
context with its dicts, the ORM compiler's recursive helper; tests/foundation/test_wsgi_cycles.py). ``close()`` is called by the server
after the last byte of the response (Django registers it as one of the response's closers);
dropping the request's attributes there breaks the cycles, and reference counting frees it all
at once. The test client builds its own requests, which tests inspect afterwards; they keep
Django's class.
"""
import os

from django.core.handlers.wsgi import WSGIRequest
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")


class CycleFreeRequest(WSGIRequest):
    def close(self):
        try:
            super().close()
        finally:
            self.__dict__.clear()


application = get_wsgi_application()
application.request_class = CycleFreeRequest

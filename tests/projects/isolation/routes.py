"""The URLs of the resolver, filled for one project: every GET page, API endpoint and download.

Integer path values are one id for every model at once (the ids of tests/projects/isolation/world.py
start at the same base in every table); string values take each valid choice (every review stage,
every artifact kind, every release file)."""
from __future__ import annotations

import itertools
import re

from django.urls import get_resolver

from tests.foundation.test_pages import _walk

SKIP_NAMES = {"login", "logout", "healthz", "favicon"}
SKIP_ROUTES = ("admin/", "api/auth/token/")
INT = re.compile(r"<int:\w+>|\(\?P<pk>\[\^/\.\]\+\)")


def _choices() -> dict[str, list[str]]:
    from curation.models import ReviewStage
    from curation.releases.views import DOWNLOADS
    from generation.views import ITEM_KINDS

    return {"stage": list(ReviewStage.values), "kind": list(ITEM_KINDS), "parent": ["procedure", "flowgraph"],
            "file": list(DOWNLOADS)}


def routes() -> list[str]:
    return sorted({r for r, name in _walk(get_resolver().url_patterns)
                   if not r.startswith(SKIP_ROUTES) and name not in SKIP_NAMES and "format" not in r})


def id_routes() -> list[str]:
    return [r for r in routes() if INT.search(r)]


def fill(route: str, slug: str, value: int) -> list[str]:
    """Every concrete URL of `route` inside project `slug` with integer parameters `value`."""
    choices = _choices()
    path = INT.sub(str(value), route)
    names = re.findall(r"<str:(\w+)>|\(\?P<(\w+)>[^)]*\)", path)
    names = [a or b for a, b in names]
    urls = []
    for combo in itertools.product(*[choices.get(n, ["x"]) for n in names]):
        url, values = path, iter(combo)
        url = re.sub(r"<str:\w+>|\(\?P<\w+>[^)]*\)", lambda _m: next(values), url)
        url = url.replace("^", "").replace("$", "")
        urls.append(f"/p/{slug}/{url}")
    return urls


def fetch(client, url: str, post_if_405: bool = False):
    response = client.get(url)
    if post_if_405 and response.status_code == 405:
        response = client.post(url, {})
    return response


def body(response) -> bytes:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return response.content


CSRF = [
    (re.compile(rb'name="csrfmiddlewaretoken" value="[^"]+"'), b'name="csrfmiddlewaretoken" value="CSRF"'),
    (re.compile(rb'"csrfToken": *"[^"]+"|csrf[-_]token" content="[^"]+"'), b"CSRF"),
]
def mask(content: bytes) -> bytes:
    """Only what legitimately differs between two renders of the same state (see the tests' docstrings)."""
    for pattern, replacement in CSRF:
        content = pattern.sub(replacement, content)
    return content

"""Every page, form and endpoint with oversized and malformed values: a 4xx or a form error, never a 500.

The URL list is walked from the resolver, so a new page is covered without editing this file.
For each one: path ids far past 64 bits, query parameters set to the same, and a POST where every
field the page's own form shows (plus the usual id fields) holds an oversized or malformed value.
"""
from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from tests.conftest import PASSWORD

HUGE = "9" * 30
BAD_VALUES = [HUGE, "-" + HUGE, "1e400", "abc", "-1", "", "1" * 5000, "0x10", "NaN"]
COMMON_FIELDS = ["jobs", "intents", "job", "pk", "id", "item", "page", "page_size", "seed", "paths", "limit",
                 "run", "release", "agent", "stage", "verdict", "decision", "note", "name", "kind", "filters",
                 "procedures_per_intent", "noise", "intents", "existing", "reason", "comment"]
SKIP_PREFIXES = ("admin/", "logout/")


def _walk(patterns, prefix=""):
    for p in patterns:
        route = prefix + str(p.pattern)
        if isinstance(p, URLResolver):
            yield from _walk(p.url_patterns, route)
        elif isinstance(p, URLPattern):
            yield route


def _fill(route: str, value: str) -> str | None:
    """A concrete path for a route pattern (Django converters or DRF regex groups)."""
    path = re.sub(r"<int:\w+>", value if value.isdigit() else "1", route)
    path = re.sub(r"<(str|slug|path):\w+>", "x", path)
    path = re.sub(r"<\w+>", "x", path)
    path = re.sub(r"\(\?P<(pk|id)>[^)]*\)", value, path)
    path = re.sub(r"\(\?P<format>[^)]*\)", "json", path)
    path = re.sub(r"\(\?P<\w+>[^)]*\)", "x", path)
    path = path.lstrip("^").replace("$", "").replace("\\.", ".").replace("\\Z", "")
    if any(c in path for c in "()[]?*+\\"):
        return None
    return "/" + path


def _routes() -> list[str]:
    routes = sorted({r for r in _walk(get_resolver().url_patterns) if not r.startswith(SKIP_PREFIXES)})
    assert len(routes) > 30, routes
    return routes


def _fields(html: str) -> set[str]:
    return set(re.findall(r'name="([\w\-]+)"', html)) - {"csrfmiddlewaretoken"}


@pytest.mark.django_db
def test_no_page_or_endpoint_answers_500_to_bad_numbers(personas):
    from curation.reviews import services
    from tests.curation.factories import build_lineage

    build_lineage(conversations=2)
    services.items_sync()
    client = Client(raise_request_exception=False)
    assert client.login(username="admin", password=PASSWORD)
    failures: list[str] = []
    checked = 0
    for route in _routes():
        for value in (HUGE, "abc"):
            url = _fill(route, value)
            if url is None:
                continue
            query = {f: HUGE for f in COMMON_FIELDS}
            resp = client.get(url, query)
            checked += 1
            if resp.status_code >= 500:
                failures.append(f"GET {url} ?{HUGE} → {resp.status_code}")
            if value != HUGE:
                continue
            # A POST per bad value, with every field the page's form shows.
            ok_url = _fill(route, "1")
            page = client.get(ok_url)
            fields = set(COMMON_FIELDS)
            if page.status_code == 200 and "html" in page.get("Content-Type", ""):
                fields |= _fields(page.content.decode(errors="replace"))
            for bad in BAD_VALUES:
                for target in {url, ok_url}:
                    resp = client.post(target, {f: bad for f in fields})
                    checked += 1
                    if resp.status_code >= 500:
                        failures.append(f"POST {target} all fields={bad[:20]!r} → {resp.status_code}")
                    if target.startswith("/api/"):
                        body = {f: bad for f in fields}
                        body["filters"] = {"jobs": [int(HUGE)], "intents": [bad]}
                        resp = client.post(target, json.dumps(body), content_type="application/json")
                        checked += 1
                        if resp.status_code >= 500:
                            failures.append(f"POST json {target} {bad[:20]!r} → {resp.status_code}")
    assert checked > 200
    assert not failures, "\n".join(failures[:40])


@pytest.mark.django_db
def test_oversized_path_id_is_a_400_not_a_500(personas):
    client = Client(raise_request_exception=False)
    client.login(username="admin", password=PASSWORD)
    resp = client.get(f"/curation/items/{HUGE}/")
    assert resp.status_code == 400 and b"out of range" in resp.content
    resp = client.get(f"/api/releases/{HUGE}/")
    assert resp.status_code == 400 and resp.json()["detail"].startswith("pk")


@pytest.mark.django_db
def test_release_filters_with_huge_ids_are_form_and_api_errors(personas):
    client = Client(raise_request_exception=False)
    client.login(username="researcher", password=PASSWORD)
    resp = client.post("/datasets/new/", {"name": "r", "kind": "curated", "licence": "CC-BY-4.0",
                                          "jobs": "99999999999999999999999"})
    assert resp.status_code == 400 and b"is not an id" in resp.content
    resp = client.post("/api/releases/", json.dumps({"name": "r", "filters": {"jobs": [10**30]}}),
                       content_type="application/json")
    assert resp.status_code == 400 and "out of range" in resp.json()["detail"]

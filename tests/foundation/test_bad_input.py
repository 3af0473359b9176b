"""Every page, form and endpoint with oversized and malformed values: a 4xx or a form error, never a 500.

Nothing here lists an endpoint or a field. The URLs come from the resolver (every route), with
path values found by crawling the pages' own links (a stage name, a kind) where a route takes a
string; the fields come from the forms the pages render (each form's inputs, posted to its
action) and from the OpenAPI schema of the serializers (request bodies, nested objects such as
a release's filters, and query parameters). So a new endpoint, form field or serializer field is
covered without anyone editing this file.

Each field gets each bad value in turn while the others keep a valid value (a bad value behind
an invalid sibling would never reach the code that breaks), then all fields at once.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from html.parser import HTMLParser
from urllib.parse import parse_qsl, urlsplit

import pytest
from django.test import Client
from django.urls import Resolver404, URLPattern, URLResolver, get_resolver, resolve

from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, RESEARCHER
from tests.conftest import PASSWORD, make_user

HUGE = "9" * 30
BIG = 2**63  # one past the largest BIGINT: the boundary SQLite's driver refuses
# Form and query values are strings; JSON bodies also get the other JSON types.
BAD_TEXT = [str(BIG), str(BIG - 1), str(-BIG - 1), "9" * 5000, "-1", "true", "1e308", "NaN", "", "abc", "0x10",
            HUGE, "1" * 5000]
BAD_JSON = [BIG, BIG - 1, -BIG - 1, -1, True, 1e308, None, "", "abc", "9" * 5000, [], {}, ["x"], [BIG], [-1],
            [True], [1e308], {"a": 1}]
COMMON_FIELDS = ["id", "pk", "item", "items", "page", "limit", "run", "runs", "release", "job", "stage"]
SKIP_PREFIXES = ("admin/", "logout/")
CRAWL_LIMIT = 400
PATH_VALUES: dict[str, str] = {}  # string path parameters the schema enumerates (a download's file)


def _walk(patterns, prefix=""):
    for p in patterns:
        route = prefix + str(p.pattern)
        if isinstance(p, URLResolver):
            yield from _walk(p.url_patterns, route)
        elif isinstance(p, URLPattern):
            yield route


def _fill(route: str, value: str, strings: dict[str, str] | None = None) -> str | None:
    """A concrete path for a route pattern (Django converters or DRF router regexes)."""
    strings = strings or {}
    path = re.sub(r"<int:\w+>", value if value.isdigit() else "1", route)
    path = re.sub(r"<\w+:(\w+)>", lambda m: strings.get(m.group(1), "x"), path)
    path = re.sub(r"\(\?P<(pk|id)>[^)]*\)", value, path)
    path = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: strings.get(m.group(1), "x"), path)
    path = path.replace("^", "").replace("$", "").replace("/?", "/").replace("\\.", ".")
    if any(c in path for c in "()[]?*+\\<>"):
        return None
    return "/" + path


def _routes() -> list[str]:
    # DRF's format-suffix twins (".json") run the same view as the route they double.
    routes = sorted({r for r in _walk(get_resolver().url_patterns)
                     if not r.startswith(SKIP_PREFIXES) and "format>" not in r})
    assert len(routes) > 30, routes
    return routes


class _Page(HTMLParser):
    """Links, and each form with its action, method and fields (name → a valid value it shows)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.forms: list[dict] = []
        self._form: dict | None = None
        self._select: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        elif tag == "form":
            self._form = {"action": a.get("action") or "", "method": (a.get("method") or "get").lower(), "fields": {}}
            self.forms.append(self._form)
        elif self._form is not None and tag in ("input", "textarea", "select", "button") and a.get("name"):
            name = a["name"]
            if name == "csrfmiddlewaretoken" or (tag == "input" and a.get("type") == "file"):
                return
            fields = self._form["fields"]
            if tag == "select":
                self._select = name
                fields.setdefault(name, "")
            elif tag == "input" and a.get("type") in ("checkbox", "radio"):
                if name not in fields or "checked" in a:
                    fields[name] = a.get("value", "on")
            else:
                fields.setdefault(name, a.get("value", "x" if tag == "textarea" else ""))
        elif tag == "option" and self._select and self._form is not None:
            fields = self._form["fields"]
            if (not fields.get(self._select) or "selected" in a) and a.get("value"):
                fields[self._select] = a["value"]

    def handle_endtag(self, tag):
        if tag == "form":
            self._form = None
        elif tag == "select":
            self._select = None


def _route_of(url: str) -> tuple[str, dict] | None:
    path = urlsplit(url).path
    if not path.startswith("/"):
        return None
    try:
        match = resolve(path)
    except Resolver404:
        return None
    return match.route, match.kwargs


def _crawl(client: Client, routes: list[str]):
    """(concrete paths per route, forms per action route) from every page reachable as `client`."""
    paths: dict[str, set[str]] = defaultdict(set)
    forms: dict[tuple[str, str], list[dict]] = defaultdict(list)
    todo = ["/"] + [u for r in routes if (u := _fill(r, "1", PATH_VALUES))]
    seen: set[str] = set()
    while todo and len(seen) < CRAWL_LIMIT:
        url = todo.pop(0)
        if url in seen or url.startswith(("/logout", "/admin")):
            continue
        seen.add(url)
        resp = client.get(url)
        hit = _route_of(url)
        if hit and resp.status_code < 400:
            paths[hit[0]].add(urlsplit(url).path)
        if resp.status_code != 200 or "html" not in resp.get("Content-Type", "") or getattr(resp, "streaming", False):
            continue
        page = _Page()
        page.feed(resp.content.decode(errors="replace"))
        for link in page.links:
            if _route_of(link) and urlsplit(link).path not in seen:
                todo.append(urlsplit(link).path)
        for form in page.forms:
            action = urlsplit(form["action"]).path or urlsplit(url).path
            target = _route_of(action)
            if target:
                paths[target[0]].add(action)
                known = forms[(target[0], form["method"])]
                if all(set(f) != set(form["fields"]) for f in known):  # the same form on many pages
                    known.append(form["fields"])
    return paths, forms


def _schema_bodies(client: Client) -> tuple[dict, dict]:
    """From the OpenAPI schema: {(route regex, method): {dotted field: valid value}} and GET parameters."""
    schema = client.get("/api/schema/", {"format": "json"}).json()
    components = schema.get("components", {}).get("schemas", {})

    def deref(node):
        while isinstance(node, dict) and "$ref" in node:
            node = components[node["$ref"].rsplit("/", 1)[1]]
        if isinstance(node, dict) and "allOf" in node:
            return deref(node["allOf"][0])
        return node

    def valid(node):
        node = deref(node)
        if "enum" in node:
            return node["enum"][0]
        if "default" in node:
            return node["default"]
        return {"integer": 1, "number": 1.0, "boolean": False, "array": [], "object": {}}.get(node.get("type"), "x")

    def fields(node, prefix=""):
        node = deref(node)
        out = {}
        for name, sub in (node.get("properties") or {}).items():
            sub = deref(sub)
            if sub.get("readOnly"):
                continue
            out[prefix + name] = valid(sub)
            if sub.get("properties"):
                out.update(fields(sub, prefix + name + "."))
        return out

    bodies, queries = {}, {}
    for path, methods in schema["paths"].items():
        regex = "^" + re.sub(r"\\{\w+\\}", "[^/]+", re.escape(path)) + "$"
        for method, op in methods.items():
            content = (op.get("requestBody") or {}).get("content", {})
            body = content.get("application/json", {}).get("schema")
            if body:
                bodies[(regex, method)] = fields(body)
            for p in op.get("parameters", []):
                if p.get("in") == "path" and deref(p.get("schema", {})).get("enum"):
                    PATH_VALUES.setdefault(p["name"], deref(p["schema"])["enum"][0])
            params = [p["name"] for p in op.get("parameters", []) if p.get("in") == "query"]
            if params:
                queries[(regex, method)] = params
    return bodies, queries


def _set(body: dict, dotted: str, value) -> dict:
    out = json.loads(json.dumps(body))
    node = out
    *parents, leaf = dotted.split(".")
    for p in parents:
        if not isinstance(node.get(p), dict):
            node[p] = {}
        node = node[p]
    node[leaf] = value
    return out


def _nest(flat: dict) -> dict:
    out: dict = {}
    for key in sorted(flat, key=lambda k: k.count(".")):
        out = _set(out, key, flat[key]) if "." in key or key not in out else out
        if "." not in key:
            out[key] = flat[key] if not isinstance(out.get(key), dict) else out[key]
    return out


def _matching(table: dict, path: str, method: str):
    return [v for (regex, m), v in table.items() if m == method and re.match(regex, path)]


@pytest.mark.django_db
def test_no_page_or_endpoint_answers_500_to_bad_values(personas):
    from curation.releases.services import release_create
    from curation.reviews import services
    from tests.curation.factories import build_lineage

    build_lineage(conversations=2)
    services.items_sync()
    release_create(name="fuzz", kind="automatic", filters={}, created_by=personas["admin"])
    make_user("fuzzer", ADMIN, RESEARCHER, ADJUDICATOR, ANNOTATOR)  # every role: no 403 hides a 500
    client = Client(raise_request_exception=False)
    assert client.login(username="fuzzer", password=PASSWORD)
    routes = _routes()
    bodies, queries = _schema_bodies(client)
    paths, forms = _crawl(client, routes)
    failures: list[str] = []
    checked = 0

    def check(resp, what: str) -> None:
        nonlocal checked
        checked += 1
        # A 503 with Retry-After is a deliberate "not yet" (analytics.csv before the worker's first
        # figures), not a crash.
        if resp.status_code >= 500 and not (resp.status_code == 503 and resp.has_header("Retry-After")):
            failures.append(f"{what} → {resp.status_code}")

    for route in routes:
        found = sorted(paths.get(route, ()))[:2]
        urls = found or [u for u in [_fill(route, "1", PATH_VALUES)] if u]
        if not urls:
            continue
        bad_path = _fill(route, str(BIG), {})
        if bad_path and bad_path not in urls:
            check(client.get(bad_path), f"GET {bad_path}")
        for url in urls:
            get_fields = set(COMMON_FIELDS)
            for fields in forms.get((route, "get"), []):
                get_fields |= set(fields)
            for params in _matching(queries, url, "get"):
                get_fields |= set(params)
            for bad in BAD_TEXT:
                check(client.get(url, {f: bad for f in get_fields}), f"GET {url} ?*={bad[:24]!r}")
            post_forms = forms.get((route, "post"), [])
            api_bodies = _matching(bodies, url, "post") + _matching(bodies, url, "put") + _matching(bodies, url, "patch")
            if not post_forms and not api_bodies:
                check(client.post(url, {f: BAD_TEXT[0] for f in COMMON_FIELDS}), f"POST {url} common fields")
                continue
            for valid in post_forms or []:
                for field in valid:
                    for bad in BAD_TEXT:
                        check(client.post(url, {**valid, field: bad}), f"POST {url} {field}={bad[:24]!r}")
                for bad in BAD_TEXT[:4]:
                    check(client.post(url, {f: bad for f in valid}), f"POST {url} *={bad[:24]!r}")
            for flat in api_bodies:
                valid = _nest(flat)
                for field in flat:
                    for bad in BAD_JSON:
                        body = _set(valid, field, bad)
                        check(client.post(url, json.dumps(body), content_type="application/json"),
                              f"POST json {url} {field}={json.dumps(bad)[:24]}")
    print(f"fuzz: {checked} requests over {len(routes)} routes")
    assert checked > 2000, checked
    assert not failures, "\n".join(sorted(set(failures))[:60])


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

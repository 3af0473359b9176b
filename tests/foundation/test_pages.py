"""Login, logout, home routing per role, the admin site, and a sweep of every URL for access checks."""
import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

pytestmark = pytest.mark.django_db

# Pages anyone may open.
PUBLIC = {"login", "healthz", "logout", "favicon"}
# Public by design: exchanges a username and password for an API token.
PUBLIC_ROUTES = ("api/auth/token/",)
# API routes answer 401/403 instead of redirecting; schema and docs still need a login.
API_PREFIX = "api/"


def _walk(patterns, prefix=""):
    for p in patterns:
        if isinstance(p, URLResolver):
            ns = p.namespace
            yield from _walk(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), p.name


def _concrete(route: str) -> str:
    """Fill path converters (<int:pk>, <str:x>, <path:p>) and strip regex anchors."""
    route = re.sub(r"<int:\w+>", "1", route)
    route = re.sub(r"<(?:str|slug|path):\w+>", "x", route)
    route = re.sub(r"<uuid:\w+>", "00000000-0000-0000-0000-000000000000", route)
    route = re.sub(r"<\w+>", "x", route)
    route = route.replace("^", "").replace("$", "").replace("\\Z", "").replace("\\", "")
    route = re.sub(r"\(\?P<\w+>[^)]*\)", "1", route)
    return "/" + route


def all_routes():
    seen = set()
    for route, name in _walk(get_resolver().url_patterns):
        if route.startswith("admin/") or name in PUBLIC or "format" in route or route in PUBLIC_ROUTES:
            continue
        url = _concrete(route)
        if url in seen or "(" in url or "[" in url:
            continue
        seen.add(url)
        yield url


ROUTES = sorted(all_routes())


def test_sweep_has_routes():
    assert "/" in ROUTES and len(ROUTES) >= 5


def fetch(client, url):
    """GET, or POST for the routes that only accept POST."""
    response = client.get(url)
    if response.status_code == 405:
        response = client.post(url, {})
    return response


@pytest.mark.parametrize("url", ROUTES)
def test_anonymous_is_sent_to_login_or_refused(client, url):
    response = fetch(client, url)
    if url.startswith("/" + API_PREFIX):  # /api/docs/ too: 401 JSON unless a browser asks for HTML
        assert response.status_code in (401, 403), f"{url} answered {response.status_code} to an anonymous caller"
    else:
        assert response.status_code == 302, f"{url} answered {response.status_code} to an anonymous visitor"
        assert response["Location"].startswith(reverse("login")), response["Location"]


@pytest.mark.parametrize("url", [u for u in ROUTES if u != "/"])
def test_user_without_role_is_refused(client, outsider, url):
    client.force_login(outsider)
    response = fetch(client, url)
    assert response.status_code in (403, 404), f"{url} answered {response.status_code} to a user with no role"


def test_login_page_and_login_flow(client, annotator_a):
    page = client.get(reverse("login"))
    assert page.status_code == 200 and b'name="password"' in page.content
    bad = client.post(reverse("login"), {"username": "annotator_a", "password": "wrong"})
    assert bad.status_code == 200 and b"didn't match" in bad.content
    good = client.post(reverse("login"), {"username": "annotator_a", "password": "pw-for-tests-1"})
    assert good.status_code == 302 and good["Location"] == reverse("home")


def test_logout_is_post_only(client, annotator_a):
    client.force_login(annotator_a)
    assert client.get(reverse("logout")).status_code == 405
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert client.get("/").status_code == 302  # logged out again


@pytest.mark.parametrize(
    "persona,destination",
    [("annotator", "curation:queue"), ("annotator_b", "curation:queue"), ("adjudicator", "curation:adjudication")],
)
def test_single_destination_roles_get_a_home_linking_their_work(client, personas, persona, destination):
    # Issue #31: every role has a home page at / (it used to redirect these roles straight on).
    client.force_login(personas[persona])
    response = client.get("/")
    assert response.status_code == 200
    assert reverse(destination).encode() in response.content
    assert client.get(reverse(destination)).status_code == 200


def test_researcher_home_lists_datasets_and_evaluation(client, researcher):
    client.force_login(researcher)
    response = client.get("/")
    assert response.status_code == 200
    assert reverse("datasets:releases").encode() in response.content
    assert reverse("evaluation:runs").encode() in response.content
    assert f'href="{reverse("generation:dashboard")}"'.encode() not in response.content


def test_admin_home_lists_everything(client, admin_user):
    client.force_login(admin_user)
    response = client.get("/")
    for name in ("generation:dashboard", "curation:queue", "curation:adjudication", "datasets:releases", "evaluation:runs"):
        assert reverse(name).encode() in response.content


def test_outsider_home_explains_missing_role(client, outsider):
    client.force_login(outsider)
    response = client.get("/")
    assert response.status_code == 200 and b"no role yet" in response.content


@pytest.mark.parametrize("persona,allowed", [
    ("annotator", False), ("adjudicator", False), ("researcher", False), ("outsider", False), ("admin", True),
])
def test_admin_site_only_for_admin_role(client, personas, persona, allowed):
    client.force_login(personas[persona])
    for url in ("/admin/", "/admin/generation/intent/", "/admin/login/"):
        response = client.get(url)
        if allowed:
            assert response.status_code == (302 if url == "/admin/login/" else 200), url
        else:
            # A logged-in user without the role gets a 403, not the admin's login form (issue #31).
            assert response.status_code == 403, (url, response.status_code)
    if allowed:
        index = client.get("/admin/").content.decode()
        assert "Stage progress<" in index and "progresss" not in index


def test_admin_site_sends_anonymous_to_its_login(client):
    response = client.get("/admin/generation/intent/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_admin_site_lists_every_model(client, admin_user):
    from django.apps import apps

    client.force_login(admin_user)
    missing = []
    for app_label in ("generation", "curation", "evaluation"):
        for model in apps.get_app_config(app_label).get_models():
            url = f"/admin/{app_label}/{model._meta.model_name}/"
            if client.get(url).status_code != 200:
                missing.append(url)
    assert missing == []


def test_role_pages_refuse_other_roles(client, personas):
    client.force_login(personas["annotator"])
    assert client.get(reverse("generation:dashboard")).status_code == 403
    assert client.get(reverse("datasets:releases")).status_code == 403
    client.force_login(personas["researcher"])
    assert client.get(reverse("curation:queue")).status_code == 403
    assert client.get(reverse("datasets:releases")).status_code == 200
    assert client.get(reverse("evaluation:runs")).status_code == 200

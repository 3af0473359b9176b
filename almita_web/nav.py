"""The top navigation, grouped by role (issue #31): every page a role may open is one click from a
group menu, and an admin's twenty links fit a 1,280 px bar as four groups.

A link is shown to the roles it names (admins see every link); a page named in several groups is
listed once, in the first. A user whose links fall in one group sees them inline; several groups
become menus (plain HTML and CSS: they open on hover and on keyboard focus).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from django.http import HttpRequest
from django.urls import get_script_prefix, reverse

from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, RESEARCHER, request_roles


@dataclass(frozen=True)
class Link:
    name: str  # URL name
    label: str
    roles: tuple[str, ...]
    args: tuple = ()


GROUPS: list[tuple[str, list[Link]]] = [
    ("Review", [
        Link("curation:queue", "Review queue", (ANNOTATOR,)),
        Link("curation:my_verdicts", "My verdicts", (ANNOTATOR,)),
        Link("curation:explore", "Explore", (ANNOTATOR, ADJUDICATOR, RESEARCHER), ("conversation",)),
    ]),
    ("Adjudicate", [
        Link("curation:adjudication", "Adjudication", (ADJUDICATOR,)),
        Link("curation:progress", "Progress", (ADJUDICATOR, RESEARCHER)),
        Link("curation:agreement", "Agreement", (ADJUDICATOR, RESEARCHER)),
    ]),
    ("Research", [
        Link("datasets:releases", "Datasets", (RESEARCHER,)),
        Link("evaluation:runs", "Evaluation", (RESEARCHER,)),
        Link("curation:analytics", "Analytics", (RESEARCHER,)),
        Link("generation:api_graph", "API graph", (RESEARCHER,)),
        Link("api:docs", "API", (RESEARCHER, ADMIN)),
    ]),
    ("Admin", [
        Link("generation:dashboard", "Generation", (ADMIN,)),
        Link("imports:upload", "Import", (ADMIN,)),
        Link("curation:gold", "Gold", (ADMIN,)),
        Link("curation:guidelines", "Guidelines", (ADMIN,), ("flowgraph",)),
        Link("curation:audit", "Audit log", (ADMIN,)),
        Link("webhooks:list", "Webhooks", (ADMIN,)),
        Link("admin:index", "Admin site", (ADMIN,)),
    ]),
]


@functools.cache
def _url_under(link: Link, prefix: str) -> str:
    return reverse(link.name, args=link.args)


def _url(link: Link) -> str:
    # URLs never change while the process runs: reverse each once per project prefix (the bar is
    # on every page).
    return _url_under(link, get_script_prefix())


def nav_groups(roles: set[str], path: str = "") -> list[dict]:
    """[{label, links: [{url, label, active}], active}] for a user holding `roles`."""
    seen: set[str] = set()
    out = []
    for label, links in GROUPS:
        shown = []
        for link in links:
            if not (ADMIN in roles or roles & set(link.roles)):
                continue
            url = _url(link)
            if url in seen:
                continue
            seen.add(url)
            # The guidelines and explorer URLs carry a stage: any stage counts as that page.
            prefix = url.rsplit("/", 2)[0] + "/" if link.args else url
            shown.append({"url": url, "label": link.label, "prefix": prefix, "active": False})
        if shown:
            out.append({"label": label, "links": shown, "active": False})
    # The current page is the link with the longest prefix of the path (/generation/ holds
    # /generation/api-graph/ too).
    best = max((x for g in out for x in g["links"] if path and path.startswith(x["prefix"])),
               key=lambda x: len(x["prefix"]), default=None)
    for g in out:
        for x in g["links"]:
            if x is best:
                x["active"] = g["active"] = True
    return out


def nav_context(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    groups = nav_groups(request_roles(request), request.path)
    return {"nav_groups": groups, "nav_menus": len(groups) > 1, **project_switch(request)}


_PROJECTS_KEY = "_almita_projects"


def project_switch(request: HttpRequest) -> dict:
    """The current project and the user's projects for the switcher (issue #30), the list kept in
    the session for ROLE_CACHE_SECONDS like the roles, so pages pay no query for it."""
    import time

    from almita_web.roles import ROLE_CACHE_SECONDS
    from projects.middleware import user_projects

    project = getattr(request, "project", None)
    user = request.user
    entry = request.session.get(_PROJECTS_KEY) if hasattr(request, "session") else None
    now = time.time()
    if isinstance(entry, dict) and entry.get("user") == user.pk and 0 <= now - entry.get("at", 0) < ROLE_CACHE_SECONDS:
        mine = entry["projects"]
    else:
        mine = [[p.slug, p.name] for p in user_projects(user).order_by("name", "id")]
        if hasattr(request, "session"):
            request.session[_PROJECTS_KEY] = {"user": user.pk, "at": now, "projects": mine}
    base = request.META.get("SCRIPT_NAME", "").rstrip("/")
    return {"current_project": project,
            "switch_projects": [{"slug": slug, "name": name, "url": f"{base}/p/{slug}/",
                                 "current": project is not None and slug == project.slug} for slug, name in mine]}

"""(a) Every page, API response and download of project A is the same, byte for byte, before and
after project B's data changes; (c) nothing of B is counted or shown in A.

Every GET route of the resolver is rendered inside A (ids: A's rows, see world.py), for people
whose roles differ between the projects. Masked before comparing, and only this (routes.mask):
  * the CSRF token (new per render);
  * the order of the roles in the header (a set: sorted before comparing).
Routes with a side effect on GET are listed in SIDE_EFFECTS (rendered, not compared).
A first pass and a second pass with nothing changed must agree, so the masks are known to be
enough; a third pass after B's changes must agree with the second.
"""
from __future__ import annotations

import pytest
from django.test import Client

from tests.projects.isolation.routes import body, fill, mask, routes
from tests.projects.isolation.world import BASE_A, MARK_B, change_b

pytestmark = pytest.mark.django_db

SIDE_EFFECTS = {"curation/queue/<str:stage>/next/"}  # claims the next item: the page after it differs
PEOPLE = ["root", "ann_a_admin_b", "admin_a_ann_b", "adj_both", "ann_both"]


def render_a(clients: dict[str, Client]) -> dict[tuple[str, str], tuple[int, bytes]]:
    out = {}
    for who, client in clients.items():
        for route in routes():
            for url in fill(route, "alpha", BASE_A):
                response = client.get(url)
                out[(who, url)] = (response.status_code, mask(body(response)), route)
    return out


def _clients(world) -> dict[str, Client]:
    clients = {}
    for who in PEOPLE:
        clients[who] = Client()
        clients[who].force_login(getattr(world, who))
    return clients


def _diff(before, after) -> list[str]:
    wrong = []
    for key, (status, content, route) in before.items():
        if route in SIDE_EFFECTS:
            continue
        status2, content2, _ = after[key]
        if (status, content) != (status2, content2):
            at = next((i for i, (x, y) in enumerate(zip(content, content2)) if x != y), min(len(content), len(content2)))
            wrong.append(f"{key[0]} {key[1]}: {status}→{status2} at byte {at}: "
                         f"{content[max(0, at - 60):at + 60]!r} → {content2[max(0, at - 60):at + 60]!r}")
    return wrong


def test_a_is_unchanged_when_b_changes(world):
    clients = _clients(world)
    first = render_a(clients)
    second = render_a(clients)
    same = _diff(first, second)
    assert not same, "A's responses differ with nothing changed (a mask is missing):\n" + "\n".join(same)
    root = [status for (who, _u), (status, _c, _r) in second.items() if who == "root"]
    assert root.count(200) >= len(root) // 2, "most of A's URLs answer (else the comparison is vacuous)"
    change_b(world, 1)
    change_b(world, 2)
    changed = _diff(second, render_a(clients))
    assert not changed, "\n".join(changed)


def test_nothing_of_b_shows_in_a(world):
    """(c) No page, API response or download of A names anything of B (every text of B carries
    MARK_B), before and after B changes."""
    clients = _clients(world)
    change_b(world, 1)
    seen = [f"{who} {url}" for (who, url), (_s, content, _r) in render_a(clients).items()
            if MARK_B.encode() in content]
    assert not seen, "\n".join(seen)

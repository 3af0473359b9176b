"""(b) Every id of project B, given to any route of project A that takes an id, answers 404.

For pages and the REST API, GET (and POST where a route only takes POST), as a site-wide
administrator (who holds every role, so only the project's scope can refuse) and as people who
hold roles in both projects. The ids are the first id of B of every model of the four apps (the
model with a project column and their children), so a route names B's row of whatever model it
takes. A positive control: the same URLs inside B mostly answer (they name real rows there).
"""
from __future__ import annotations

import pytest

from tests.projects.isolation.routes import fetch, fill, id_routes
from tests.projects.isolation.world import OWNING, project_models

pytestmark = pytest.mark.django_db


def b_values(world) -> list[int]:
    return sorted({ids[0] for ids in world.b.ids.values()})


def test_every_owning_model_has_a_project_column():
    have = {m._meta.label for m in project_models()}
    assert [label for label in OWNING if label not in have] == []


def test_world_has_rows_of_b_in_every_owning_model(world):
    assert [label for label in OWNING if label not in world.b.ids] == []


MISSING = 999_999_000  # an id no table holds


@pytest.mark.parametrize("who", ["root", "ann_a_admin_b", "admin_a_ann_b", "adj_both"])
def test_ids_of_b_answer_404_in_a(client, world, who):
    """As a site-wide administrator: 404. As anyone: exactly what an id that exists nowhere gets
    (a person without the role in A gets that role's 403 for every id alike, revealing nothing)."""
    client.force_login(getattr(world, who))
    wrong = []
    for route in id_routes():
        for method in ("get", "post"):
            nowhere = [getattr(client, method)(u, {}).status_code for u in fill(route, "alpha", MISSING)]
            if who == "root":
                nowhere = [405 if s == 405 else 404 for s in nowhere]
            for value in b_values(world):
                for url, expected in zip(fill(route, "alpha", value), nowhere):
                    status = getattr(client, method)(url, {}).status_code
                    if status != expected:
                        wrong.append(f"{who} {method.upper()} {url}: {status} (an id of nowhere: {expected})")
    assert not wrong, "\n".join(wrong)


def test_the_same_ids_answer_inside_b(client, world):
    """Not vacuous: inside B the routes find the rows (404 there only where a route needs a row
    the world lacks, listed here)."""
    client.force_login(world.root)
    missing = []
    for route in id_routes():
        urls = fill(route, "beta", world.b.ids.get("generation.Intent")[0])
        if all(fetch(client, u, post_if_405=True).status_code == 404 for u in urls):
            missing.append(route)
    assert len(missing) <= len(id_routes()) // 3, missing

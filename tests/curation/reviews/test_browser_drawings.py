"""Issue #29 in a real browser: a review page whose graph the worker has not drawn yet shows
"Drawing…", polls, and swaps in the worker's drawing, set up like a stored one (zoom tools, the
conversation's path highlighted). 1400 px screenshots under var/screenshots/."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from curation.models import ReviewStage
from curation.reviews import services
from tests.curation.factories import build_lineage
from tests.curation.reviews.test_browser import CHROMIUM, browser, login  # noqa: F401 - fixture

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]
SHOTS = Path(__file__).resolve().parents[3] / "var" / "screenshots"


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 900})
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_the_placeholder_is_replaced_by_the_workers_drawing(browser, live_server, annotator_a,  # noqa: F811
                                                             drawing_worker):
    build_lineage(conversations=1)
    services.items_sync()
    item = services.review_claim_next(annotator=annotator_a, stage=ReviewStage.CONVERSATION)
    connection.close()
    page = login(browser, live_server, annotator_a.username)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.set_viewport_size({"width": 1400, "height": 900})
    response = page.goto(f"{live_server.url}/curation/items/{item.pk}/")
    # The page answered with the placeholder (the worker draws it after the page answered). Read from
    # the response, not the live page: on a loaded machine the drawing may already have replaced it.
    assert "Drawing…" in response.text().split('<figure class="graph', 1)[1]
    shot(page, "review_drawing_pending")
    page.wait_for_selector("figure.graph .graph-canvas svg g.node", timeout=20000)
    assert "Drawing…" not in page.inner_text("figure.graph")
    assert page.locator("figure.graph g.node.on-path").count() >= 2  # the path, highlighted in the browser
    assert page.locator("figure.graph g.edge.on-path").count() >= 1
    assert page.locator("figure.graph .svg-pan-zoom_viewport").count() == 1  # zoom set up like a stored drawing
    page.click("figure.graph .graph-tools button[data-act='in']")
    shot(page, "review_drawing_arrived")
    assert errors == []
    connection.close()


def test_a_sampled_paths_item_page_highlights_the_path_on_the_stored_drawing(browser, live_server,  # noqa: F811
                                                                             admin_user, drawing_worker):
    from generation.models import SampledPath
    from tests.curation.factories import draw_graphs

    build_lineage(conversations=1)
    draw_graphs()  # the worker's drawings
    path = SampledPath.objects.first()
    connection.close()
    page = login(browser, live_server, admin_user.username)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{live_server.url}/generation/items/path/{path.pk}/")
    page.wait_for_selector("figure.item-graph g.node.on-path")
    assert page.locator("figure.item-graph g.node.on-path").count() == len(set(path.node_ids))
    shot(page, "generation_path_item")
    assert errors == [] and not drawing_worker
    connection.close()

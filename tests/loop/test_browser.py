"""The coverage drawing and the "Fill the gaps" action in a real browser (screenshots under
var/screenshots/)."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connections

from curation.models import ReviewStage
from generation.models import Conversation, GapFill, GenerationJob
from tests.curation.reviews.test_browser import ARGS, CHROMIUM, browser, login  # noqa: F401 - fixture

from .helpers import accept_lineage_above, build_graph_with_conversations, decide, item_of

SHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]


@pytest.mark.django_db(transaction=True)
def test_coverage_drawing_and_fill_the_gaps(browser, live_server, admin_user, annotator_a, annotator_b,  # noqa: F811
                                            analytics_inline, drawing_worker):
    cg = build_graph_with_conversations()
    users = [annotator_a, annotator_b]
    accept_lineage_above(cg, users)
    convs = list(Conversation.objects.filter(path__conversation_graph=cg).order_by("pk"))
    decide(item_of(ReviewStage.CONVERSATION, convs[0]), users, "reject", ["CV-OFF-PATH"])
    for c in convs[1:]:
        decide(item_of(ReviewStage.CONVERSATION, c), users)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = login(browser, live_server, admin_user.username)
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{live_server.url}/generation/items/conversation_graph/{cg.pk}/")
    section = page.locator("#coverage")
    section.locator("svg g.edge").first.wait_for()  # "Drawing…" until the worker's drawing arrives (polled)
    assert section.locator(".drawing-pending").count() == 0
    assert section.locator("svg g.edge.uncovered").count() >= 1
    assert section.locator("svg g.edge.covered").count() >= 1
    assert section.locator(".legend").inner_text().strip().startswith("covered by an accepted conversation")
    assert "Retry limit: 3 attempts per edge" in section.inner_text()
    section.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "loop_graph_coverage.png"), full_page=True)
    section.locator("select[name=conversations]").select_option("offline")
    section.locator("button", has_text="Fill the gaps").click()
    page.wait_for_selector("text=Coverage and economics")
    assert "paths for the uncovered edges of graph" in page.inner_text("body")
    page.screenshot(path=str(SHOTS / "loop_job_after_fill.png"), full_page=True)
    job = GenerationJob.objects.get()
    assert page.url.endswith(f"/generation/jobs/{job.pk}/") and GapFill.objects.filter(job=job).exists()
    page.goto(f"{live_server.url}/curation/analytics/")
    page.wait_for_selector("svg.bars")
    page.screenshot(path=str(SHOTS / "loop_analytics.png"), full_page=True)
    connections.close_all()

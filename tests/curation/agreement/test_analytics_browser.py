"""The analytics page while the worker computes, in Chromium at 1,280 and 1,920 px: "Computing…"
before the first figures, "Recomputing… (figures as of …)" after a change, and the page reloads
by itself once the worker stored newer figures. Screenshots under var/screenshots/."""
from __future__ import annotations

import pytest
from django.db import connections

from curation.agreement import precompute
from curation.models import ReviewItem, ReviewStage
from curation.reviews import services
from tests.curation.reviews.test_browser import CHROMIUM, browser  # noqa: F401  (fixture)
from tests.curation.reviews.test_browser_scale import login, shot
from tests.foundation.test_browser_home_nav import world  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]


def test_states_and_the_reload_when_figures_arrive(browser, live_server, admin_user, adjudicator, world,  # noqa: F811
                                                   monkeypatch):
    queued: list[float] = []
    monkeypatch.setattr(precompute, "_enqueue", queued.append)  # no worker: this test plays it
    disputed = ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH)
    for i, (width, height) in enumerate([(1280, 800), (1920, 1080)]):
        precompute.forget()
        page = login(browser, live_server, admin_user.username, width, height)
        page.goto(f"{live_server.url}/curation/analytics/")
        assert "Computing…" in page.locator("#analytics-state").inner_text() and queued
        shot(page, f"analytics-computing-{width}")
        precompute.recompute()  # the worker; the page polls and reloads by itself
        page.wait_for_selector("#analytics-table", timeout=15000)
        assert "Figures as of" in page.locator("#analytics-state").inner_text()
        services.item_resolve(adjudicator=adjudicator, item_id=disputed.pk, decision=["accept", "reject"][i],
                              note="browser")
        page.reload()
        state = page.locator("#analytics-state")
        assert state.inner_text().startswith("Recomputing… (figures as of ") and page.locator("#analytics-table").count() == 1
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        shot(page, f"analytics-recomputing-{width}")
        precompute.recompute()
        page.wait_for_function("document.querySelector('#analytics-state').dataset.stale === '0'", timeout=15000)
        assert "(current)" in page.locator("#analytics-state").inner_text()
        page.context.close()
    connections.close_all()

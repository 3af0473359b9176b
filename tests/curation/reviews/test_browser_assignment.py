"""Issue #30 item 4 in Chromium: an adjudicator assigns the last flowgraph of the explorer to an
annotator; it is listed first under "Assigned to you" in the annotator's queue, their "Next item"
opens it, and the other annotator is never offered it. Screenshots (1,400 px) under
var/screenshots/a30-assign-*."""
from __future__ import annotations

import pytest
from django.db import connections

from curation.models import Assignment, ReviewItem, ReviewStage
from curation.reviews import services
from tests.curation.factories import build_lineage
from tests.curation.reviews.test_browser import CHROMIUM, browser, login, shots  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]


def _shot(page, name: str) -> None:
    shots(page, f"a30-assign-{name}", widths=(1400,))


def test_assign_from_the_explorer_and_see_it_first_in_the_queue(browser, live_server, annotator_a, annotator_b,
                                                                  adjudicator):
    for seed in range(3):
        build_lineage(conversations=1, seed=seed)
    services.items_sync()
    ReviewItem.objects.filter(stage=ReviewStage.FLOWGRAPH).update(required_reviews=1)
    last = ReviewItem.objects.filter(stage=ReviewStage.FLOWGRAPH).order_by("pk").last()
    connections.close_all()

    j = login(browser, live_server, adjudicator.username)
    j.set_viewport_size({"width": 1400, "height": 900})
    j.goto(f"{live_server.url}/curation/explore/flowgraph/")
    j.check(f'tr[data-item="{last.pk}"] input[name="items"]')
    j.fill("#assign-names", annotator_a.username)
    j.select_option("#assign-mode", "named")
    _shot(j, "explorer-form")
    with j.expect_navigation():
        j.click("#bulk-assign")
    assert "1 assignment(s) on 1 item(s)" in j.inner_text(".messages")
    assert j.inner_text(f'tr[data-item="{last.pk}"] td[data-col="assigned"]').strip() == annotator_a.username
    _shot(j, "explorer-assigned")
    # Bad input: a message, nothing assigned.
    j.check(f'tr[data-item="{last.pk}"] input[name="items"]')
    j.fill("#assign-names", f"{annotator_a.username} 60, {annotator_b.username} 30")
    j.select_option("#assign-mode", "percent")
    with j.expect_navigation():
        j.click("#bulk-assign")
    assert "add up to 100" in j.inner_text(".messages")
    assert Assignment.objects.count() == 1
    connections.close_all()

    # The other annotator is offered the two other flowgraphs, never the assigned one.
    b = login(browser, live_server, annotator_b.username)
    b.goto(f"{live_server.url}/curation/queue/")
    assert b.locator("#assigned").count() == 0
    assert b.inner_text('tr[data-stage="flowgraph"] td').strip() == "2"
    connections.close_all()

    a = login(browser, live_server, annotator_a.username)
    a.set_viewport_size({"width": 1400, "height": 900})
    a.goto(f"{live_server.url}/curation/queue/")
    assert a.get_attribute("#assigned li:first-child", "data-item") == str(last.pk)
    assert "0 / 1 done" in a.inner_text("#my-progress")
    _shot(a, "queue")
    a.click("#next-flowgraph")
    a.wait_for_selector("#review-form")
    assert a.url.rstrip("/").endswith(f"/curation/items/{last.pk}")
    _shot(a, "review")
    connections.close_all()

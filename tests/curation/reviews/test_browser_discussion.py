"""Issue #31 item 4 in Chromium: change a verdict, discuss, be told of an overturn, read one's history."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connections

from curation.models import Notification, Review, ReviewItem, ReviewStage
from curation.reviews import services
from tests.curation.factories import build_lineage
from tests.curation.reviews.test_browser import CHROMIUM, browser, login, open_next_flowgraph  # noqa: F401 - fixture

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]
SHOTS = Path(__file__).resolve().parents[3] / "var" / "screenshots"


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1280, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(SHOTS / f"i31-{name}-{width}.png"), full_page=True)


def test_change_discuss_overturn_history(browser, live_server, annotator_a, annotator_b, adjudicator):  # noqa: F811
    build_lineage(conversations=1)
    services.items_sync()
    item = ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH)
    url = f"{live_server.url}/curation/items/{item.pk}/"

    a = login(browser, live_server, annotator_a.username)
    open_next_flowgraph(a, live_server)
    a.keyboard.press("a")
    a.wait_for_selector(".messages")
    a.goto(url)
    a.click("#change-verdict summary")
    a.locator('#change-form input[name="reason_codes"]').first.check()
    a.click("#btn-change-reject")
    a.wait_for_selector("#own-verdict .badge.reject")
    a.fill("#comment-body", "Step 3 <b>drops</b> the refund branch; `find_order_by_email(order_id=85270)` never returns.")
    a.click("#btn-comment")
    a.wait_for_selector("#thread li")
    assert a.locator("#thread li .who").inner_text() == "you"
    assert a.locator("#thread b").count() == 0  # the comment's markup is text
    shot(a, "review-discussion")

    b = login(browser, live_server, annotator_b.username)
    open_next_flowgraph(b, live_server)
    assert b.locator("#discussion").count() == 0  # blind until b submits
    b.keyboard.press("a")
    b.wait_for_selector(".messages")
    b.goto(url)
    assert "refund branch" in b.locator("#thread").inner_text()
    assert b.locator("#change-verdict").count() == 0  # every review is in

    j = login(browser, live_server, adjudicator.username)
    j.goto(f"{live_server.url}/curation/adjudication/{item.pk}/")
    assert "refund branch" in j.locator("#thread").inner_text()
    j.check('#resolve-form input[value="accept"]')
    j.fill('#resolve-form textarea[name="note"]', "The refund branch is there, at node 5.")
    j.click("#btn-resolve")
    j.wait_for_selector(".messages")

    a.goto(f"{live_server.url}/curation/queue/")
    assert a.locator("#nav-notifications .count").inner_text() == "1"
    a.click("#nav-notifications")
    assert "node 5" in a.locator("#notifications").inner_text()
    shot(a, "notifications")
    a.click("#mark-read button")
    a.wait_for_selector(".messages")
    assert a.locator("#nav-notifications .count").count() == 0
    a.goto(f"{live_server.url}/curation/my-verdicts/?status=overturned")
    assert a.locator("#my-verdicts tbody tr").count() == 1
    assert "Overturned" in a.locator("#my-verdicts").inner_text()
    shot(a, "my-verdicts")
    assert Review.objects.get(item=item, annotator=annotator_a).verdict == "reject"
    assert Notification.objects.filter(user=annotator_a, read_at__isnull=False).count() == 1
    connections.close_all()

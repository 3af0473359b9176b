"""Issue #30 in a real browser at 1,280 and 1,920 px: a user with every role in two projects sees
the current project and the switcher in the bar (on one line), switches to the other project's
home, finds only that project's items in its queue, and edits the project's settings as its
admin. Screenshots var/screenshots/projects-*.png."""
from __future__ import annotations

import pytest
from django.db import connections

from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, RESEARCHER, assign_roles
from curation.models import ReviewItem
from tests.conftest import make_user
from tests.curation.reviews.test_browser import CHROMIUM, browser  # noqa: F401  (fixture)
from tests.curation.reviews.test_browser_scale import login, shot
from tests.foundation.test_browser_home_nav import one_line_bar

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]

WIDTHS = [(1280, 800), (1920, 1080)]
ROLES = (ADMIN, ANNOTATOR, ADJUDICATOR, RESEARCHER)


def _available(page, stage: str) -> str:
    return page.locator(f'#stages tr[data-stage="{stage}"] td').first.inner_text()


def test_switching_projects_queue_and_settings(browser, live_server, world):  # noqa: F811
    user = make_user("someone_in_two_projects", *ROLES)  # every role in Default…
    assign_roles(user, ROLES, world.b)  # …and in Shipping bot
    in_a = ReviewItem._base_manager.filter(project=world.a, stage="conversation").count()
    in_b = ReviewItem._base_manager.filter(project=world.b, stage="conversation").count()
    assert in_a != in_b or in_a  # the two queues can be told apart
    b_objects = set(ReviewItem._base_manager.filter(project=world.b).values_list("pk", flat=True))
    held = 0
    for width, height in WIDTHS:
        page = login(browser, live_server, user.username, width, height)
        page.goto(f"{live_server.url}/p/default/")
        one_line_bar(page)
        assert page.locator("#project-switch summary").inner_text().strip() == "Project: Default ▾" or \
            "Default" in page.locator("#project-switch summary").inner_text()
        page.click("#project-switch summary")
        links = page.locator("#project-switch ul a")
        assert {"Default", "Shipping bot", "Project settings"} <= set(links.all_inner_texts())
        shot(page, f"projects-switcher-{width}")
        with page.expect_navigation():
            page.locator("#project-switch ul a", has_text="Shipping bot").click()
        assert page.url == f"{live_server.url}/p/shipping/"
        assert "Shipping bot" in page.locator("#project-switch summary").inner_text()
        one_line_bar(page)
        shot(page, f"projects-home-shipping-{width}")

        page.goto(f"{live_server.url}/p/shipping/curation/queue/")
        assert _available(page, "conversation") == str(in_b - held)  # the one held is not offered again
        one_line_bar(page)
        shot(page, f"projects-queue-shipping-{width}")
        if not held:
            with page.expect_navigation():
                page.click("#next-conversation")
            assert "/p/shipping/curation/items/" in page.url
            claimed, held = int(page.url.rstrip("/").split("/")[-1]), 1
            assert claimed in b_objects
        page.goto(f"{live_server.url}/p/default/curation/queue/")
        assert _available(page, "conversation") == str(in_a)
        # B's item is not reachable from A: 404, not 403.
        assert page.goto(f"{live_server.url}/p/default/curation/items/{claimed}/").status == 404

        page.goto(f"{live_server.url}/p/shipping/settings/")
        one_line_bar(page)
        assert "site's default" in page.locator("#id_reviews_per_item_helptext").inner_text()
        assert "count as accepted" in page.inner_text("main form")
        page.fill("#id_reviews_per_item", "3")
        page.fill("#id_claim_minutes", "45")
        with page.expect_navigation():
            page.click("button.primary[type=submit]")
        assert page.url == f"{live_server.url}/p/shipping/settings/"
        assert page.locator("ul.messages").is_visible()
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.evaluate("window.scrollTo(0, 0)")
        shot(page, f"projects-settings-{width}")
        page.context.close()
    world.b.refresh_from_db()
    assert (world.b.reviews_per_item, world.b.claim_minutes) == (3, 45)
    connections.close_all()

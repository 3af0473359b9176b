"""Issue #31 item 6 in a real browser at 1,280 and 1,920 px: the grouped navigation on one line,
its menus by mouse and keyboard, each role's home, analytics' selectors and the audit log's
differences and pages. Screenshots under var/screenshots/."""
from __future__ import annotations

import pytest
from django.db import connections

from curation.guidance import flags as flag_services
from curation.models import ReviewItem, ReviewStage
from curation.reviews import services
from tests.curation.factories import build_lineage
from tests.curation.reviews.test_browser import CHROMIUM, browser  # noqa: F401  (fixture)
from tests.curation.reviews.test_browser_scale import login, shot

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]

WIDTHS = [(1280, 800), (1920, 1080)]


def _review(item, user, verdict):
    assert services.review_claim_next(annotator=user, stage=item.stage).pk == item.pk
    flag_services.review_submit_flagged(annotator=user, item_id=item.pk, verdict=verdict,
                                        reason_codes=[] if verdict == "accept" else ["OTHER"], comment="see")


@pytest.fixture
def world(db, annotator_a, annotator_b):
    build_lineage(conversations=2)
    services.items_sync()
    fg = ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH)
    _review(fg, annotator_a, "accept")
    _review(fg, annotator_b, "reject")
    for conv in ReviewItem.objects.filter(stage=ReviewStage.CONVERSATION):
        _review(conv, annotator_a, "accept")
        _review(conv, annotator_b, "accept")


def one_line_bar(page) -> None:
    """The bar is one row: nothing wraps, nothing overflows the window."""
    bar = page.locator("header.topbar").bounding_box()
    assert bar["height"] < 60, bar
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    tops = page.evaluate("""() => [...document.querySelectorAll('header.topbar nav > a, header.topbar nav > .navgroup > button,'
        + ' header.topbar .logout button')].map(e => Math.round(e.getBoundingClientRect().top))""")
    assert max(tops) - min(tops) <= 4, tops  # one row (buttons differ by a pixel or two)


def test_admin_bar_menus_home_analytics_and_audit(browser, live_server, admin_user, world, analytics_inline):  # noqa: F811
    for width, height in WIDTHS:
        page = login(browser, live_server, admin_user.username, width, height)
        assert page.url.rstrip("/") == live_server.url  # home after login
        one_line_bar(page)
        assert page.locator("header nav .navgroup").count() == 4
        for part in ("#home-annotator", "#home-adjudicator", "#home-curation", "#home-releases", "#home-runs", "#home-jobs"):
            assert page.locator(part).is_visible(), part
        assert page.locator("#adj-waiting").inner_text() == "1"
        shot(page, f"home-admin-{width}")

        # A menu opens on hover and lists the pages nothing linked before.
        page.hover('.navgroup[data-group="Research"] > button')
        menu = page.locator('.navgroup[data-group="Research"] .navmenu')
        assert menu.is_visible()
        assert menu.locator("a", has_text="API graph").is_visible()
        shot(page, f"nav-menu-{width}")
        with page.expect_navigation():
            menu.locator("a", has_text="Analytics").click()
        assert "/curation/analytics/" in page.url
        one_line_bar(page)
        assert "Analytics" in page.locator('.navgroup.active > button').inner_text()
        # One table; choosing a slice shows it at once.
        assert page.locator("#analytics-table").count() == 1
        with page.expect_navigation():
            page.select_option("#pick-slice", "mode")
        assert "slice=mode" in page.url and page.locator("#analytics-table th").nth(1).inner_text() == "Mode"
        with page.expect_navigation():
            page.select_option("#pick-stage", "conversation")
        assert page.locator("#analytics-table tbody tr").count() >= 1
        assert page.locator("#analytics-chart svg.bars").is_visible()
        shot(page, f"analytics-{width}")

        # The keyboard reaches a menu: Tab onto the Admin group, then into its links.
        page.goto(f"{live_server.url}/")
        page.focus('.navgroup[data-group="Admin"] > button')
        admin_menu = page.locator('.navgroup[data-group="Admin"] .navmenu')
        assert admin_menu.is_visible()
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Generation"
        page.goto(f"{live_server.url}/curation/audit/")
        one_line_bar(page)
        assert page.locator("#audit table.diff ins").count() >= 1
        assert page.locator("#audit").bounding_box()["width"] <= width
        shot(page, f"audit-{width}")
        with page.expect_navigation():
            page.select_option("#audit-filters select[name=action]", "verdict")
            page.click("#audit-filters button[type=submit]")
        actions = page.locator("#audit > tbody > tr[data-event] > td:nth-child(3)").all_inner_texts()
        assert actions and set(actions) == {"Verdict"}
        page.context.close()
    connections.close_all()


@pytest.mark.parametrize("persona", ["annotator", "adjudicator", "researcher"])
def test_each_role_home(browser, live_server, personas, world, persona):  # noqa: F811
    for width, height in WIDTHS:
        page = login(browser, live_server, personas[persona].username, width, height)
        assert page.url.rstrip("/") == live_server.url
        one_line_bar(page)
        if persona == "annotator":
            assert page.locator("header nav .navgroup").count() == 0  # one group: links inline
            assert page.locator("#home-adjudicator, #home-curation, #home-jobs").count() == 0
            assert page.locator("#my-done").inner_text() == "3"
            # "Review next" takes the annotator straight to an item.
            if page.locator("#home-next-conversation_graph").count():
                with page.expect_navigation():
                    page.click("#home-next-conversation_graph")
                assert "/curation/items/" in page.url
                page.goto(f"{live_server.url}/")
        elif persona == "adjudicator":
            assert page.locator("#adj-waiting").inner_text() == "1"
            assert page.locator("#home-annotator, #home-jobs").count() == 0
        else:
            assert page.locator("#home-releases").is_visible() and page.locator("#home-runs").is_visible()
            assert page.locator("#home-adjudicator").count() == 0 and page.locator("#home-curation").is_visible()
        shot(page, f"home-{persona}-{width}")
        page.context.close()
    connections.close_all()


def test_bar_of_a_user_with_every_role_fits_1280(browser, live_server, db):  # noqa: F811
    from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, RESEARCHER
    from tests.conftest import make_user

    user = make_user("someone_with_a_rather_long_name", ADMIN, ANNOTATOR, ADJUDICATOR, RESEARCHER)
    page = login(browser, live_server, user.username, 1280, 800)
    page.goto(f"{live_server.url}/curation/audit/")
    one_line_bar(page)
    assert page.locator("header .logout button").is_visible()
    shot(page, "nav-every-role-1280")
    page.context.close()
    connections.close_all()

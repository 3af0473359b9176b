"""The review flow in a real browser: two annotators disagree by keyboard, an adjudicator decides."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.db import connections

from curation.models import ItemState, ReviewItem, ReviewStage
from curation.reviews import services
from generation.models import ConversationGraph, CurationStatus, Flowgraph
from tests.conftest import PASSWORD
from tests.curation.factories import build_lineage, draw_graphs

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]

# While Playwright's sync API runs its event loop, Django keys connections on that context, so
# the ORM calls in a test body use a connection of their own: each test closes it at its end, or
# Postgres refuses to drop the test database ("being accessed by other users").

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]


@pytest.fixture
def browser(live_server):
    # Depends on live_server so that the browser closes before the live server stops.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        # Let in-flight requests finish before the live server and the test database go away.
        for context in b.contexts:
            for page in context.pages:
                page.wait_for_load_state("networkidle")
            context.close()
        b.close()


def login(browser, live_server, username):
    page = browser.new_context().new_page()
    page.set_default_timeout(15000)
    page.goto(f"{live_server.url}/login/")
    page.fill('input[name="username"]', username)
    page.fill('input[name="password"]', PASSWORD)
    page.click('button[type="submit"]')
    page.wait_for_load_state()
    return page


def shots(page, name: str, *, full_page: bool = True, widths=(1280, 1920)) -> None:
    """Screenshots at each width under var/screenshots/, asserting nothing sticks out of the page."""
    folder = Path(__file__).resolve().parents[3] / "var" / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    for width in widths:
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(folder / f"{name}-{width}.png"), full_page=full_page)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), (name, width)


def open_next_flowgraph(page, live_server):
    page.goto(f"{live_server.url}/curation/queue/")
    page.click("#next-flowgraph")
    page.wait_for_selector("#review-form")
    # The form is parsed before the page's scripts run: keys pressed earlier do nothing.
    page.wait_for_selector('html[data-review-keys="ready"]', state="attached")


def test_blind_double_review_then_adjudication(browser, live_server, annotator_a, annotator_b, adjudicator):
    lin = build_lineage(conversations=2)
    services.items_sync()
    draw_graphs()  # the worker's drawings
    item = ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH)

    # Annotator A rejects with the keyboard: r asks for a reason, 1 picks one, r submits.
    a = login(browser, live_server, annotator_a.username)
    open_next_flowgraph(a, live_server)
    assert a.locator("figure.graph .graph-canvas > svg").count() == 1
    assert a.locator("figure.graph svg g.node").count() == len(lin.flowgraph.data["nodes"])
    a.keyboard.press("?")
    assert a.locator("#help").is_visible()
    a.keyboard.press("?")
    a.fill("#comment", "A-PRIVATE-COMMENT: the lost branch skips the refund check")
    a.keyboard.press("Escape")
    a.keyboard.press("r")
    assert a.locator("#reject-hint").is_visible()
    a.keyboard.press("1")
    with a.expect_navigation():
        a.keyboard.press("r")
    assert "/curation/queue/" in a.url  # nothing else to review in this stage
    assert "No more flowgraph" in a.content()

    # Annotator B opens the same item: nothing of A's verdict is visible. B accepts with "a".
    b = login(browser, live_server, annotator_b.username)
    open_next_flowgraph(b, live_server)
    assert f"/curation/items/{item.pk}/" in b.url
    html = b.content()
    assert "A-PRIVATE-COMMENT" not in html
    assert b.locator("#other-verdicts").count() == 0
    assert b.locator("figure.graph .graph-canvas > svg").count() == 1
    with b.expect_navigation():
        b.keyboard.press("a")
    item.refresh_from_db()
    assert item.state == ItemState.DISAGREEMENT

    # The adjudicator sees both verdicts side by side, names hidden, and must write a note.
    j = login(browser, live_server, adjudicator.username)
    j.goto(f"{live_server.url}/curation/adjudication/")
    j.click("#disagreements a.button")
    j.wait_for_selector("#resolve-form")
    verdicts = j.locator("#verdicts").inner_text()
    assert "Annotator 1" in verdicts and "Annotator 2" in verdicts
    assert "annotator_a" not in verdicts and "A-PRIVATE-COMMENT" in verdicts
    j.click("#toggle-names")
    j.wait_for_selector("#resolve-form")
    assert "annotator_a" in j.locator("#verdicts").inner_text()
    j.check('input[name="decision"][value="reject"]')
    j.fill('textarea[name="note"]', "The lost branch must check eligibility before refunding.")
    with j.expect_navigation():
        j.click("#btn-resolve")
    assert j.locator("#item-decision").inner_text().strip() == "Reject"
    assert j.locator("#artifact-status").inner_text().strip() == "Rejected"
    cascade = j.locator("#cascade").inner_text()
    assert "conversation graphs" in cascade and "excluded" in cascade and "tests" in cascade

    assert Flowgraph.objects.get(pk=lin.flowgraph.pk).status == CurationStatus.REJECTED
    assert ConversationGraph.objects.get(pk=lin.conversation_graph.pk).status == CurationStatus.EXCLUDED
    connections.close_all()


def test_undo_and_skip_from_the_keyboard(browser, live_server, annotator_a):
    build_lineage(conversations=1)
    build_lineage(conversations=1)
    services.items_sync()
    first, second = ReviewItem.objects.filter(stage=ReviewStage.FLOWGRAPH).order_by("id")

    a = login(browser, live_server, annotator_a.username)
    open_next_flowgraph(a, live_server)
    assert f"/curation/items/{first.pk}/" in a.url
    with a.expect_navigation():
        a.keyboard.press("a")  # accept → straight on to the next item
    assert f"/curation/items/{second.pk}/" in a.url
    with a.expect_navigation():
        a.keyboard.press("u")  # withdraw the accept → back on the first item, form ready again
    assert f"/curation/items/{first.pk}/" in a.url
    assert a.locator("#review-form").count() == 1
    first.refresh_from_db()
    assert first.review_count == 0
    with a.expect_navigation():
        a.keyboard.press("s")  # skip it: it will not come back
    assert f"/curation/items/{second.pk}/" in a.url
    assert first.skips.filter(annotator=annotator_a).exists()
    connections.close_all()

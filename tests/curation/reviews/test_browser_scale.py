"""Review at scale in a real browser: zoom and fit, linked highlighting, flags by mouse and keyboard,
the adjudicator's combined drawing. Screenshots at 1400 px go to var/screenshots/."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.db import connections

from curation.guidance import flags as flag_services
from curation.models import Flag, ItemState, Review, ReviewItem, ReviewMeta, ReviewStage
from curation.reviews import services
from tests.conftest import PASSWORD
from tests.curation.factories import build_lineage
from tests.curation.reviews.test_browser import CHROMIUM, browser  # noqa: F401  (fixture)


@pytest.fixture(autouse=True)
def _worker_draws(drawing_worker):
    """Pages show the worker's drawings (they never draw in a request): a stand-in worker makes
    each queued drawing shortly after the page answered, and the page swaps it in."""
    return drawing_worker

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]

SHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"
SCRIPT = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


def login(browser, live_server, username, width=1400, height=900):  # noqa: F811
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.set_default_timeout(15000)
    page.goto(f"{live_server.url}/login/")
    page.fill('input[name="username"]', username)
    page.fill('input[name="password"]', PASSWORD)
    page.click('button[type="submit"]')
    page.wait_for_load_state()
    return page


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


def open_next(page, live_server, stage: str):
    page.goto(f"{live_server.url}/curation/queue/")
    page.click(f"#next-{stage}")
    page.wait_for_selector("#review-form")
    # The form is parsed before the page's scripts run: keys pressed earlier do nothing.
    page.wait_for_selector('html[data-review-keys="ready"]', state="attached")
    # Graphs come from the worker (the stand-in draws them half a second after the page answered).
    page.wait_for_function("!document.querySelector('.drawing-pending')", timeout=15000)
    page.wait_for_function("Array.from(document.querySelectorAll('figure.graph svg')).every("
                           "s => s.closest('figure').hasAttribute('data-zoom'))", timeout=15000)


def test_flowgraph_zoom_fit_highlight_and_flags(browser, live_server, annotator_a):  # noqa: F811
    build_lineage(conversations=1)
    services.items_sync()
    item = ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH)
    a = login(browser, live_server, annotator_a.username)
    open_next(a, live_server, "flowgraph")
    fig = a.locator("figure.graph.primary")
    # Layout at 1400 px: the graph beside its procedure (issue #31), the verdict panel above the fold.
    assert fig.bounding_box()["width"] >= 420
    verdict = a.locator("#verdict-panel").bounding_box()
    assert verdict["y"] < 400 and verdict["x"] > a.locator("#procedure").bounding_box()["x"] + 420
    assert a.locator("#btn-reject").bounding_box()["y"] < 900
    assert a.locator("#lineage").get_attribute("open") is None
    shot(a, "review-flowgraph")

    # Zoom in, zoom out, fit, full size.
    a.click("figure.graph.primary [data-act=fit]")
    fitted = float(fig.get_attribute("data-zoom"))
    a.click("figure.graph.primary [data-act=in]")
    assert float(fig.get_attribute("data-zoom")) > fitted
    a.keyboard.press("-")
    a.keyboard.press("-")
    assert float(fig.get_attribute("data-zoom")) < fitted
    a.keyboard.press("=")
    assert abs(float(fig.get_attribute("data-zoom")) - fitted) < 1e-3
    a.click("figure.graph.primary [data-act=full]")
    box = fig.bounding_box()
    assert box["width"] >= 1390 and box["height"] >= 880
    shot(a, "review-flowgraph-fullsize")
    a.keyboard.press("Escape")
    assert "fullsize" not in fig.get_attribute("class")

    # Clicking a node lights it and its edges.
    a.click('g.node[data-id="N2"]')
    assert "hl" in a.get_attribute('g.node[data-id="N2"]', "class")
    lit = set(a.eval_on_selector_all("g.edge.hl", "els => els.map(e => e.dataset.id)"))
    assert lit == {"N1->N2", "N2->N3", "N2->N4"}

    # Flag it by mouse, with a hostile comment that must stay text.
    a.select_option("#flag-reason", "FG-WRONG-BRANCH")
    a.fill("#flag-comment", SCRIPT)
    a.click("#flag-add")
    assert a.locator("#flag-list li").count() == 1
    assert "flagged" in a.get_attribute('g.node[data-id="N2"]', "class")
    assert SCRIPT in a.locator("#flag-list").inner_text()

    # Flag an edge by keyboard: e selects the first edge, f opens the reason, Enter adds.
    a.keyboard.press("e")
    assert a.locator("g.edge.hl-sel").count() == 1
    a.keyboard.press("f")
    assert a.evaluate("document.activeElement.id") == "flag-reason"
    a.keyboard.press("Tab")
    a.keyboard.type("edge label is wrong")
    a.keyboard.press("Enter")
    assert a.locator("#flag-list li").count() == 2
    # And a node by keyboard: ] selects the first node.
    a.keyboard.press("]")
    a.keyboard.press("f")
    a.keyboard.press("Enter")
    assert a.locator("#flag-list li").count() == 3
    shot(a, "review-flowgraph-flags")

    # A rejection made of flags alone.
    with a.expect_navigation():
        a.keyboard.press("r")
    assert a.evaluate("window.__pwned") is None
    review = Review.objects.get(item=item, annotator=annotator_a)
    flags = list(Flag.objects.filter(review=review).order_by("id"))
    assert review.verdict == "reject" and [f.kind for f in flags] == ["node", "edge", "node"]
    assert flags[0].target == "N2" and flags[0].comment == SCRIPT
    assert flags[1].comment == "edge label is wrong" and "->" in flags[1].target
    assert set(review.reason_codes) == {f.reason for f in flags}
    meta = ReviewMeta.objects.get(review=review)
    assert meta.seconds is not None and meta.guideline_version == 1
    connections.close_all()


def test_conversation_turns_and_nodes_light_each_other_and_take_flags(browser, live_server, annotator_a):  # noqa: F811
    lin = build_lineage(conversations=1)
    services.items_sync()
    a = login(browser, live_server, annotator_a.username)
    open_next(a, live_server, "conversation")
    shot(a, "review-conversation")
    assert a.locator("figure.graph.primary").bounding_box()["width"] >= 420
    # The path is highlighted in the browser on the graph's stored drawing (no drawing per conversation).
    path = [str(n) for n in lin.conversations[0].path.node_ids]
    lit = a.eval_on_selector_all("figure.graph.primary g.node.on-path", "els => els.map(e => e.getAttribute('data-id'))")
    assert set(lit) == set(path)
    steps = a.locator("figure.graph.primary g.edge.on-path")
    assert steps.count() >= 1 and "path step" in steps.first.get_attribute("aria-label")
    assert steps.first.locator("path").first.get_attribute("stroke") == "#9467bd"
    # A turn lights the node it realises; a node lights its turns.
    turn = a.locator("li.turn[data-node]:not([data-node=''])").first
    node_id = turn.get_attribute("data-node")
    turn.click()
    assert "hl" in a.get_attribute(f'g.node[data-id="{node_id}"]', "class")
    a.keyboard.press("Escape")
    a.click(f'g.node[data-id="{node_id}"]')
    assert "hl" in turn.get_attribute("class")

    # Flag a turn by mouse and another by keyboard (t selects the first turn).
    a.locator("li.turn").nth(1).click()
    a.select_option("#flag-reason", "CV-UNNATURAL")
    a.click("#flag-add")
    a.keyboard.press("Escape")  # clear the selection: t then starts from the first turn
    a.keyboard.press("t")
    a.keyboard.press("f")
    a.keyboard.press("Tab")
    a.keyboard.type(SCRIPT)
    a.keyboard.press("Enter")
    assert a.locator("#flag-list li").count() == 2
    assert "flagged" in a.locator("li.turn").nth(0).get_attribute("class")
    with a.expect_navigation():
        a.keyboard.press("r")
    review = Review.objects.get(annotator=annotator_a, item__stage=ReviewStage.CONVERSATION)
    got = {(f.kind, f.target) for f in review.flags.all()}
    assert got == {("turn", "1"), ("turn", "0")}
    assert review.item.object_id == lin.conversations[0].pk
    connections.close_all()


def test_adjudicator_sees_both_annotators_flags_on_one_drawing(browser, live_server, annotator_a, annotator_b,  # noqa: F811
                                                              adjudicator):
    build_lineage(conversations=1)
    services.items_sync()
    item = ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH)
    for user, verdict, flags in (
        (annotator_a, "reject", [{"kind": "node", "target": "N2", "reason": "FG-WRONG-BRANCH", "comment": SCRIPT},
                                 {"kind": "node", "target": "N4", "reason": "FG-UNFAITHFUL"}]),
        (annotator_b, "accept", [{"kind": "node", "target": "N2", "reason": "FG-UNFAITHFUL"},
                                 {"kind": "edge", "target": "N5->N6", "reason": "FG-UNFAITHFUL"}]),
    ):
        assert services.review_claim_next(annotator=user, stage=ReviewStage.FLOWGRAPH).pk == item.pk
        flag_services.review_submit_flagged(annotator=user, item_id=item.pk, verdict=verdict, flags=flags)
    item.refresh_from_db()
    assert item.state == ItemState.DISAGREEMENT

    j = login(browser, live_server, adjudicator.username)
    j.goto(f"{live_server.url}/curation/adjudicate/{item.pk}/".replace("adjudicate", "adjudication"))
    j.wait_for_selector("#flag-compare")
    assert "flag-both" in j.get_attribute('g.node[data-id="N2"]', "class")
    assert "flag-a" in j.get_attribute('g.node[data-id="N4"]', "class")
    assert "flag-b" in j.get_attribute('g.edge[data-id="N5->N6"]', "class")
    rows = j.locator("#flag-table tbody tr")
    assert rows.count() == 3
    assert SCRIPT in j.locator("#flag-table").inner_text()
    assert j.evaluate("window.__pwned") is None
    j.locator('#flag-table tr[data-flag-target="N4"]').click()
    assert "hl" in j.get_attribute('g.node[data-id="N4"]', "class")
    j.locator("#flag-compare").scroll_into_view_if_needed()
    shot(j, "adjudicate-flags")
    j.locator("figure.graph.primary").scroll_into_view_if_needed()
    shot(j, "adjudicate-drawing")
    connections.close_all()


def test_explorer_filters_and_bulk_actions(browser, live_server, annotator_a, annotator_b, adjudicator):  # noqa: F811
    build_lineage(conversations=1)
    build_lineage(conversations=1, seed=1)
    services.items_sync()
    first, second = ReviewItem.objects.filter(stage=ReviewStage.FLOWGRAPH).order_by("id")
    for user, verdict in ((annotator_a, "reject"), (annotator_b, "accept")):
        services.review_claim_next(annotator=user, stage=ReviewStage.FLOWGRAPH)
        flag_services.review_submit_flagged(annotator=user, item_id=first.pk, verdict=verdict,
                                            reason_codes=["FG-UNFAITHFUL"] if verdict == "reject" else [])

    # From the agreement page to the filtered list of disagreements.
    j = login(browser, live_server, adjudicator.username)
    j.goto(f"{live_server.url}/curation/agreement/")
    j.click("#disagreements-flowgraph")
    j.wait_for_selector("#explore-table")
    assert "split=yes" in j.url
    assert j.locator("#explore-table tbody tr").count() == 1
    # Filters go into the URL.
    j.goto(f"{live_server.url}/curation/explore/flowgraph/")
    j.select_option('select[name="state"]', "open")
    j.select_option('select[name="sort"]', "-id")
    with j.expect_navigation():
        j.click("#apply-filters")
    assert "state=open" in j.url and "sort=-id" in j.url
    assert j.locator("#explore-table tbody tr").count() == 1
    assert j.locator("#explore-table tbody tr").get_attribute("data-item") == str(second.pk)
    shot(j, "explore-flowgraph")
    # Bulk: tick all, set three reviews needed; then exclude.
    j.check("#tick-all")
    j.fill("#bulk-required-n", "3")
    with j.expect_navigation():
        j.click("#bulk-required")
    assert "1 item(s) changed" in j.content() and "state=open" in j.url
    second.refresh_from_db()
    assert second.required_reviews == 3
    j.check("#tick-all")
    with j.expect_navigation():
        j.click("#bulk-exclude")
    second.refresh_from_db()
    assert second.excluded

    # The annotator sees their own verdict, read-only, and no bulk actions.
    a = login(browser, live_server, annotator_a.username)
    a.goto(f"{live_server.url}/curation/explore/flowgraph/")
    assert a.locator("#explore-table tbody tr").count() == 1 and a.locator("#bulk-actions").count() == 0
    shot(a, "explore-annotator")
    with a.expect_navigation():
        a.click("#explore-table a")
    assert a.locator("#own-verdict").count() == 1 and a.locator("#review-form").count() == 0
    connections.close_all()


def _accept(item, *users):
    for user in users:
        assert services.review_claim_next(annotator=user, stage=item.stage).pk == item.pk
        flag_services.review_submit_flagged(annotator=user, item_id=item.pk, verdict="accept")


def test_gold_seeding_and_accuracy(browser, live_server, annotator_a, annotator_b, annotator_c, admin_user):  # noqa: F811
    from curation.models import GoldItem

    for i in range(3):
        build_lineage(conversations=1, seed=i)
    services.items_sync()
    source = ReviewItem.objects.filter(stage=ReviewStage.FLOWGRAPH).order_by("id").first()
    _accept(source, annotator_a, annotator_b)

    admin = login(browser, live_server, admin_user.username)
    admin.goto(f"{live_server.url}/curation/gold/")
    admin.select_option('#gold-seed-form select[name="stage"]', "flowgraph")
    admin.fill('#gold-seed-form input[name="rate"]', "25")
    with admin.expect_navigation():
        admin.click("#gold-seed")
    assert "Seeded 1 known-bad copy" in admin.content()
    seeded = GoldItem.objects.get()
    assert seeded.item.stage == ReviewStage.FLOWGRAPH and seeded.source_id == source.pk

    # The annotator works through the queue; the seeded copy looks like any other item.
    c = login(browser, live_server, annotator_c.username)
    open_next(c, live_server, "flowgraph")
    seen = []
    while "/curation/items/" in c.url:
        seen.append(int(c.url.rstrip("/").rsplit("/", 1)[1]))
        html = c.content().lower()
        assert "gold" not in html and "seeded" not in html and "known-bad" not in html
        with c.expect_navigation():
            c.keyboard.press("a")
    assert seeded.item_id in seen and len(seen) == 3

    admin.goto(f"{live_server.url}/curation/progress/")
    row = admin.locator("#gold-accuracy tbody tr", has_text="annotator_c")
    assert row.count() == 1
    cells = row.locator("td").all_inner_texts()
    assert cells[1:4] == ["1", "0", "0 %"] and cells[4] == "0.00 – 0.79"
    assert admin.locator("#pace tbody tr", has_text="annotator_c").count() == 1
    admin.locator("#pace").scroll_into_view_if_needed()
    shot(admin, "progress-pace-gold")
    admin.goto(f"{live_server.url}/curation/gold/")
    assert "✗" in admin.locator("#gold-items").inner_text()
    shot(admin, "gold")
    connections.close_all()


def test_pages_at_1400px_login_guidelines_release(browser, live_server, annotator_a, annotator_b, admin_user):  # noqa: F811
    from curation.releases.services import release_create

    page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    page.goto(f"{live_server.url}/login/")
    assert "tool-using customer-support agents" in page.locator("#about").inner_text()
    assert page.evaluate("document.querySelector('link[rel=icon]').href").endswith("favicon.svg")
    shot(page, "login")

    lin = build_lineage(conversations=2)
    services.items_sync()
    for conv in lin.conversations:
        _accept(ReviewItem.objects.get(stage=ReviewStage.CONVERSATION, object_id=conv.pk), annotator_a, annotator_b)
    release = release_create(name="demo", created_by=admin_user)
    admin = login(browser, live_server, admin_user.username)
    admin.goto(f"{live_server.url}/datasets/{release.pk}/")
    assert admin.locator("#release-preview tbody tr").count() == min(10, len(lin.tests))
    assert admin.locator("#dataset-card h1, #dataset-card h2").count() >= 1
    admin.locator("#release-preview").scroll_into_view_if_needed()
    shot(admin, "release-preview")
    admin.goto(f"{live_server.url}/curation/guidelines/flowgraph/")
    admin.fill('textarea[name="codes"]', "FG-MISSING-STEP: A step of the procedure is missing.")
    with admin.expect_navigation():
        admin.click("#save-guidelines")
    assert "Saved version 2" in admin.content()
    shot(admin, "guidelines")
    connections.close_all()


def test_procedure_and_conversation_graph_pages_at_1400px(browser, live_server, annotator_a):  # noqa: F811
    build_lineage(conversations=1)
    services.items_sync()
    a = login(browser, live_server, annotator_a.username)
    open_next(a, live_server, "conversation_graph")
    fig = a.locator("figure.graph.primary")
    assert fig.bounding_box()["width"] >= 420 and a.locator("#verdict-panel").bounding_box()["y"] < 400
    # The flowgraph beside it, drawn (issue #31; it was folded away).
    assert a.locator("#parent-graph svg g.node").count() >= 1
    # Clicking an edge lights it and its two ends.
    edge = a.locator("figure.graph.primary g.edge[data-id]").first
    source, target = edge.get_attribute("data-source"), edge.get_attribute("data-target")
    edge.locator("path").first.dispatch_event("click")
    assert "hl" in edge.get_attribute("class")
    for node in (source, target):
        assert "hl" in a.get_attribute(f'figure.graph.primary g.node[data-id="{node}"]', "class")
    shot(a, "review-conversation-graph")
    open_next(a, live_server, "procedure")
    assert a.locator("#procedure .markdown ol li").count() >= 3  # Markdown rendered, not a raw text box
    assert a.locator("#verdict-panel").bounding_box()["y"] < 400
    shot(a, "review-procedure")
    connections.close_all()

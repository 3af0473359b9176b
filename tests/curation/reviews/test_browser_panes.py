"""Issue #31 item 2 in a real browser: the item beside its parent in two panes, each graph pane
zoomable with a minimap and readable at "Fit", turns and nodes lighting each other, long API calls
wrapped, every control inside its column — at 1,280 and 1,920 px (screenshots under
var/screenshots/)."""
from __future__ import annotations

import pytest
from django.db import connections

from curation.models import ReviewItem, ReviewStage
from curation.reviews import services
from generation.models import Conversation
from tests.curation.factories import build_lineage
from tests.curation.reviews.test_browser import CHROMIUM, browser  # noqa: F401  (fixture)
from tests.curation.reviews.test_browser_scale import login, shot


@pytest.fixture(autouse=True)
def _worker_draws(drawing_worker):
    """Pages show the worker's drawings (they never draw in a request): a stand-in worker makes
    each queued drawing shortly after the page answered, and the page swaps it in."""
    return drawing_worker

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]

WIDTHS = [(1280, 800), (1920, 1080)]
MIN_FONT_PX = 10  # static/js/graph.js

# A flowgraph of 13 nodes whose conversation graph (20 nodes) is too tall to fit a pane readably.
BIG = """\
[N0](start_message){Hello, how can I help you today?}
[N1](message){Please tell me the e-mail address on the order.}
[N2](api){get_order}
[N3](message){I could not find an order for that address. Could you check it?}
[N4](message){I found your order. Which item is missing from the parcel?}
[N6](api){get_order}
[N7](message){The parcel is marked as lost. Would you like a refund or a replacement?}
[N8](api){refund_order}
[N9](end_message){Your refund has been issued and will reach you in five days.}
[N10](message){I will send a replacement. Can you confirm the delivery address?}
[N11](end_message){The replacement is on its way.}
[N12](end_message){The parcel is on its way and will arrive soon.}
[N13](end_message){Sorry, I could not find your order. Goodbye.}
[E0](N0, N1){My order has not arrived}
[E1](N1, N2){Here is my e-mail}
[E2](N2, N3){not found}
[E3](N2, N4){found}
[E4](N3, N13){I do not have another address}
[E5](N4, N6){The blue jacket}
[E6](N6, N7){lost}
[E7](N6, N12){shipped}
[E8](N7, N8){A refund please}
[E9](N7, N10){A replacement please}
[E10](N8, N9){success}
[E11](N10, N11){Yes, the same address}
"""
LONG_CALL = ("find_order_by_email(order_id=852709381726551726351999,email='customer.with.a.very.long.address"
             "@example-shop-domain.com',include_history=True,include_refunds=True)")


def open_item(page, live_server, item):
    page.goto(f"{live_server.url}/curation/items/{item.pk}/")
    page.wait_for_selector('html[data-review-keys="ready"]', state="attached")
    # Every pane's drawing comes from the worker (the stand-in draws each one half a second after
    # the page answered, in its own thread): wait until none is pending and every figure is set up.
    page.wait_for_function("!document.querySelector('.drawing-pending')", timeout=15000)
    page.wait_for_function("Array.from(document.querySelectorAll('figure.graph')).every("
                           "f => f.hasAttribute('data-font-px'))", timeout=15000)


def claim(item, user):
    assert services.review_claim_next(annotator=user, stage=item.stage).pk == item.pk


def side_by_side(page, left: str, right: str) -> None:
    a, b = page.locator(left).bounding_box(), page.locator(right).bounding_box()
    assert abs(a["y"] - b["y"]) < 2, (a, b)  # one row
    assert a["x"] + a["width"] <= b["x"] and b["width"] >= 380 and a["width"] >= 380, (a, b)
    assert abs(a["height"] - b["height"]) < 2  # panes of one height
    verdict = page.locator("#verdict-panel").bounding_box()
    assert verdict["x"] >= b["x"] + b["width"] and verdict["y"] < 200


def controls_fit(page) -> None:
    """Every select, input, textarea and button of the verdict column lies inside the column."""
    out = page.evaluate("""() => {
      const col = document.querySelector('.review-side').getBoundingClientRect();
      return [...document.querySelectorAll('.review-side select, .review-side input:not([type=hidden]),'
          + ' .review-side textarea, .review-side button')]
        .filter(el => el.offsetParent !== null)
        .filter(el => { const r = el.getBoundingClientRect(); return r.left < col.left - 0.5 || r.right > col.right + 0.5; })
        .map(el => el.id || el.name || el.outerHTML.slice(0, 60));
    }""")
    assert out == []
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def font_px(page, fig: str) -> float:
    return float(page.get_attribute(fig, "data-font-px"))


def test_conversation_beside_its_graph(browser, live_server, annotator_a):  # noqa: F811
    lin = build_lineage(conversations=1, text=BIG)
    conv = lin.conversations[0]
    messages = list(conv.messages)
    at = next(i for i, m in enumerate(messages) if m["role"] == "api")
    messages[at] = {"role": "api", "content": LONG_CALL}
    Conversation.objects.filter(pk=conv.pk).update(messages=messages)
    services.items_sync()
    item = ReviewItem.objects.get(stage=ReviewStage.CONVERSATION)
    claim(item, annotator_a)
    for width, height in WIDTHS:
        page = login(browser, live_server, annotator_a.username, width, height)
        open_item(page, live_server, item)
        side_by_side(page, "figure.graph.primary", "#conversation")
        # Readable at fit: the graph is too tall to fit whole, so it opens at the smallest zoom
        # whose labels are MIN_FONT_PX on screen, with a minimap to move about.
        assert font_px(page, "figure.graph.primary") >= MIN_FONT_PX - 0.01
        assert "clamped" in page.get_attribute("figure.graph.primary", "class")
        assert page.locator("figure.graph.primary .minimap svg .minimap-view").count() == 1
        # The long API call wraps inside its turn and its pane.
        call = page.locator(f"li.turn[data-turn='{at}']")
        assert LONG_CALL in call.inner_text().replace("\n", "")
        assert call.evaluate("el => el.scrollWidth <= el.clientWidth + 1")
        turns = page.locator("#conversation").bounding_box()
        box = call.bounding_box()
        assert box["x"] + box["width"] <= turns["x"] + turns["width"]
        controls_fit(page)
        page.click("#skip-form select")  # the skip dropdown opens inside the column too
        page.keyboard.press("Escape")
        shot(page, f"review-conversation-panes-{width}")

        # A turn lights its node and the edge the conversation took into it, and back.
        turn = page.locator("li.turn[data-node]:not([data-node=''])").nth(3)
        node = turn.get_attribute("data-node")
        prev = page.evaluate("""(n) => { const lis = [...document.querySelectorAll('li.turn')];
            const i = lis.findIndex(li => li.dataset.turn === n);
            for (let k = i - 1; k >= 0; k--) { const m = lis[k].dataset.node; if (m && m !== lis[i].dataset.node) return m; }
            return null; }""", turn.get_attribute("data-turn"))
        turn.click()
        assert "hl-sel" in page.get_attribute(f'figure.graph.primary g.node[data-id="{node}"]', "class")
        assert prev is not None
        assert "hl-turn" in page.get_attribute(f'figure.graph.primary g.edge[data-id="{prev}->{node}"]', "class")
        # ...and the node is brought into the pane.
        inside = page.evaluate("""(n) => { const s = document.querySelector('figure.graph.primary svg').getBoundingClientRect();
            const r = document.querySelector(`figure.graph.primary g.node[data-id="${n}"]`).getBoundingClientRect();
            return r.left >= s.left && r.right <= s.right && r.top >= s.top && r.bottom <= s.bottom; }""", node)
        assert inside
        shot(page, f"review-conversation-turn-{width}")
        page.keyboard.press("Escape")
        page.locator(f'figure.graph.primary g.node[data-id="{node}"]').dispatch_event("click")
        assert "hl" in turn.get_attribute("class")

        # The shortcuts still work: + zooms in, = fits readably again, t picks a turn, ? helps.
        fitted = float(page.get_attribute("figure.graph.primary", "data-zoom"))
        page.keyboard.press("+")
        assert float(page.get_attribute("figure.graph.primary", "data-zoom")) > fitted
        page.keyboard.press("=")
        assert abs(float(page.get_attribute("figure.graph.primary", "data-zoom")) - fitted) < 1e-3
        page.keyboard.press("t")
        assert page.locator("li.turn.hl-sel").count() == 1
        page.keyboard.press("?")
        assert page.locator("#help").is_visible()
        page.keyboard.press("?")
        page.context.close()
    connections.close_all()


def test_conversation_graph_beside_its_flowgraph_with_minimaps(browser, live_server, annotator_a):  # noqa: F811
    build_lineage(conversations=1, text=BIG)
    services.items_sync()
    item = ReviewItem.objects.get(stage=ReviewStage.CONVERSATION_GRAPH)
    claim(item, annotator_a)
    for width, height in WIDTHS:
        page = login(browser, live_server, annotator_a.username, width, height)
        open_item(page, live_server, item)
        side_by_side(page, "figure.graph.primary", "#parent-graph")
        for fig in ("figure.graph.primary", "#parent-graph"):
            assert page.locator(f"{fig} .graph-canvas > svg g.node[data-id]").count() >= 13
            assert page.locator(f"{fig} .minimap svg").count() == 1
            # Shown exactly when the drawing is too big to show whole at a readable size.
            clamped = "clamped" in page.get_attribute(fig, "class")
            assert page.locator(f"{fig} .minimap").is_visible() == clamped
            assert font_px(page, fig) >= MIN_FONT_PX - 0.01
        assert "clamped" in page.get_attribute("figure.graph.primary", "class")
        # Each pane zooms by itself.
        before = float(page.get_attribute("#parent-graph", "data-zoom"))
        page.click("#parent-graph [data-act=in]")
        assert float(page.get_attribute("#parent-graph", "data-zoom")) > before
        assert abs(float(page.get_attribute("figure.graph.primary", "data-zoom"))
                   - float(page.get_attribute("figure.graph.primary", "data-zoom"))) < 1e-9
        # A click on the minimap's bottom moves the view there: the outline follows.
        view_y = float(page.get_attribute("figure.graph.primary .minimap-view", "y"))
        mini = page.locator("figure.graph.primary .minimap").bounding_box()
        page.mouse.click(mini["x"] + mini["width"] / 2, mini["y"] + mini["height"] - 4)
        assert float(page.get_attribute("figure.graph.primary .minimap-view", "y")) > view_y + 50
        controls_fit(page)
        shot(page, f"review-conversation-graph-panes-{width}")
        # Nodes in the parent pane light up too, and only there.
        first = page.locator("#parent-graph g.node[data-id]").first
        first.dispatch_event("click")
        assert "hl" in first.get_attribute("class")
        page.context.close()
    connections.close_all()


def test_flowgraph_beside_its_procedure(browser, live_server, annotator_a):  # noqa: F811
    build_lineage(conversations=1)
    services.items_sync()
    item = ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH)
    claim(item, annotator_a)
    for width, height in WIDTHS:
        page = login(browser, live_server, annotator_a.username, width, height)
        open_item(page, live_server, item)
        side_by_side(page, "figure.graph.primary", "#procedure")
        # A small graph fits whole, at a readable size, and is not clamped.
        assert font_px(page, "figure.graph.primary") >= MIN_FONT_PX - 0.01
        assert "clamped" not in page.get_attribute("figure.graph.primary", "class")
        # The whole drawing is in view: no minimap over it, until zooming in hides a part.
        assert not page.locator("figure.graph.primary .minimap").is_visible()
        page.click("figure.graph.primary [data-act=in]")
        page.click("figure.graph.primary [data-act=in]")
        assert page.locator("figure.graph.primary .minimap").is_visible()
        page.keyboard.press("=")
        assert not page.locator("figure.graph.primary .minimap").is_visible()
        controls_fit(page)
        shot(page, f"review-flowgraph-panes-{width}")
        page.context.close()
    connections.close_all()

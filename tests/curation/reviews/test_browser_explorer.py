"""Issue #31 item 3 in Chromium at 1,280 and 1,920 px: the explorer's column picker (remembered
across reloads), previews, the side panel (j/k, Enter, Esc) with its blindness, open items for
adjudicators, a bulk action on the whole filter with its confirmation, the admin's gold toggle.
Screenshots under var/screenshots/i31-explorer-*."""
from __future__ import annotations


import pytest
from django.db import connections
from django.utils import timezone

from curation.models import GoldItem, ReviewItem, ReviewStage
from curation.reviews import services
from tests.curation.factories import build_lineage, draw_graphs
from tests.curation.reviews.test_browser import CHROMIUM, browser, login, shots  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]


def _shot(page, name: str) -> None:
    shots(page, f"i31-explorer-{name}", full_page=False)


def _review(user, item, verdict, codes=()):
    services._claim_upsert(ReviewItem.objects.get(pk=item.pk), user, timezone.now())
    services.review_submit(annotator=user, item_id=item.pk, verdict=verdict, reason_codes=list(codes))


def test_explorer_data_manager(browser, live_server, annotator_a, annotator_b, adjudicator, admin_user):
    for seed in range(3):
        build_lineage(conversations=1, seed=seed)
    services.items_sync()
    draw_graphs()  # the worker's drawings
    agreed, disputed, _ = ReviewItem.objects.filter(stage=ReviewStage.CONVERSATION).order_by("pk")
    _review(annotator_a, agreed, "accept")
    _review(annotator_b, agreed, "accept")
    _review(annotator_a, disputed, "accept")
    _review(annotator_b, disputed, "reject", ["CV-OFF-PATH"])
    open_fg = ReviewItem.objects.filter(stage=ReviewStage.FLOWGRAPH).order_by("pk").first()
    _review(annotator_a, open_fg, "reject", ["FG-ROOT"])
    connections.close_all()

    j = login(browser, live_server, adjudicator.username)
    j.set_viewport_size({"width": 1280, "height": 900})
    j.goto(f"{live_server.url}/curation/explore/conversation/")
    first_turn = j.inner_text(f'tr[data-item="{agreed.pk}"] td[data-col="preview"]')
    assert "turns" in first_turn and len(first_turn) > 20
    # Columns: hide the preview; the choice survives a reload.
    j.click("#column-picker summary")
    j.uncheck('#column-picker input[data-col="preview"]')
    j.check('#column-picker input[data-col="created"]')
    assert not j.is_visible('#explore-table th[data-col="preview"]')
    j.reload()
    assert not j.is_visible('#explore-table th[data-col="preview"]') and j.is_visible('#explore-table th[data-col="created"]')
    j.click("#column-picker summary")
    j.check('#column-picker input[data-col="preview"]')
    j.click("#column-picker summary")
    # The keyboard: j, Enter opens the side panel; j, Enter the next; Esc closes it.
    j.keyboard.press("j")
    j.keyboard.press("Enter")
    j.wait_for_selector(f'#panel-head[data-item="{agreed.pk}"]')
    j.keyboard.press("j")
    j.keyboard.press("Enter")
    j.wait_for_selector(f'#panel-head[data-item="{disputed.pk}"]')
    verdicts = j.inner_text("#panel-verdicts")
    assert "Accept" in verdicts and "Reject" in verdicts  # every review is in: the adjudicator sees both
    assert j.locator("#explore-panel .turn").count() > 0
    _shot(j, "panel-adjudicator")
    j.keyboard.press("Escape")
    assert j.is_hidden("#explore-panel")

    # An open item: its content opens, its verdict does not.
    j.goto(f"{live_server.url}/curation/explore/flowgraph/")
    j.click(f'tr[data-item="{open_fg.pk}"] button.open-panel')
    j.wait_for_selector(f'#panel-head[data-item="{open_fg.pk}"]')
    assert "verdicts stay hidden" in j.inner_text("#panel-verdicts")
    assert j.locator("#panel-verdicts .badge").count() == 0 and j.locator("#explore-panel svg").count() >= 1
    _shot(j, "panel-open-item")
    j.click("#panel-full")
    j.wait_for_selector("#still-open")
    assert j.locator("#resolve-form").count() == 0

    # A bulk action on the whole filter: the count, a confirmation, then every item of the filter.
    j.goto(f"{live_server.url}/curation/explore/flowgraph/?state=open")
    total = int(j.get_attribute("#result-count", "data-total"))
    assert total == 3
    j.select_option("#bulk-scope", "filter")
    j.fill("#bulk-required-n", "4")
    asked = []
    j.once("dialog", lambda d: (asked.append(d.message), d.accept()))
    with j.expect_navigation():
        j.click("#bulk-required")
    assert asked and "all 3 items" in asked[0]
    assert "3 item(s) changed" in j.inner_text(".messages")
    assert ReviewItem.objects.filter(stage=ReviewStage.FLOWGRAPH, required_reviews=4).count() == 3
    connections.close_all()

    # The admin's gold toggle.
    boss = login(browser, live_server, admin_user.username)
    boss.goto(f"{live_server.url}/curation/explore/conversation/")
    with boss.expect_navigation():
        boss.click(f'tr[data-item="{disputed.pk}"] button.gold-off[value="reject"]')
    assert boss.inner_text(f'tr[data-item="{disputed.pk}"] td[data-col="gold"]').strip() == "★ gold"
    assert GoldItem.objects.get(item=disputed).expected == "reject"
    _shot(boss, "gold")
    with boss.expect_navigation():
        boss.click(f'tr[data-item="{disputed.pk}"] button.gold-on')
    assert not GoldItem.objects.filter(item=disputed).exists()
    connections.close_all()

    # Annotator A: the agreed and the disputed conversation read alike in the side panel too.
    a = login(browser, live_server, annotator_a.username)
    a.set_viewport_size({"width": 1280, "height": 900})
    a.goto(f"{live_server.url}/curation/explore/conversation/")
    seen = []
    for item in (agreed, disputed):
        a.click(f'tr[data-item="{item.pk}"] button.open-panel')
        a.wait_for_selector(f'#panel-head[data-item="{item.pk}"]')
        seen.append((a.inner_text("#panel-state"), a.inner_text("#panel-verdicts")))
    assert seen[0] == seen[1] and seen[0][0] == "All reviews in" and "Reject" not in seen[1][1]
    _shot(a, "panel-annotator")
    connections.close_all()

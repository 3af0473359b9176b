"""Issue #31 in Chromium at 1,280 and 1,920 px: the explorer shows each item's one effective state
(excluded, not "awaiting adjudication") and refuses "Include again" under a rejected ancestor with
the reason; an annotator's explorer shows only their own verdict, "all reviews in" whatever the
others said; the agreement page leaves excluded items out and says so; the queue page's `u`
undoes the last verdict. Screenshots under var/screenshots/."""
from __future__ import annotations


import pytest
from django.db import connections
from django.utils import timezone

from curation.models import ReviewItem, ReviewStage
from curation.reviews import services
from tests.curation.factories import build_lineage
from tests.curation.reviews.test_browser import CHROMIUM, browser, login, shots  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]


def _shot(page, name: str) -> None:
    shots(page, f"i31-{name}", full_page=True)


def _review(user, item, verdict, codes=()):
    services._claim_upsert(ReviewItem.objects.get(pk=item.pk), user, timezone.now())
    services.review_submit(annotator=user, item_id=item.pk, verdict=verdict, reason_codes=list(codes))


def test_explorer_agreement_and_queue_undo(browser, live_server, annotator_a, annotator_b, adjudicator):
    build_lineage(conversations=2)
    services.items_sync()
    fg = ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH)
    cg = ReviewItem.objects.get(stage=ReviewStage.CONVERSATION_GRAPH)
    conv, conv2 = ReviewItem.objects.filter(stage=ReviewStage.CONVERSATION).order_by("pk")
    # The conversation: A and B disagree (awaiting adjudication); the second one: they agree.
    _review(annotator_a, conv, "accept")
    _review(annotator_b, conv, "reject", ["CV-OFF-PATH"])
    _review(annotator_a, conv2, "accept")
    _review(annotator_b, conv2, "accept")
    # Then both reject the flowgraph: everything below it is excluded.
    _review(annotator_a, fg, "reject", ["FG-ROOT"])
    _review(annotator_b, fg, "reject", ["FG-ROOT"])
    connections.close_all()

    staff = login(browser, live_server, adjudicator.username)
    staff.goto(f"{live_server.url}/curation/explore/conversation/")
    states = staff.eval_on_selector_all("#explore-table [data-state]", "els => els.map(e => e.dataset.state)")
    assert states == ["excluded", "excluded"]
    assert "Awaiting adjudication" not in staff.inner_text("#explore-table")
    # "Include again" on the excluded conversation graph is refused with the reason.
    staff.goto(f"{live_server.url}/curation/explore/conversation_graph/")
    staff.check(f'input[name="items"][value="{cg.pk}"]')
    staff.click("#bulk-include")
    staff.wait_for_selector(".messages")
    refusal = staff.inner_text(".messages")
    assert "Not included again" in refusal and f"Flowgraph #{fg.object_id}" in refusal
    assert staff.inner_text(f'tr[data-item="{cg.pk}"] [data-state]') == "Excluded (ancestor rejected)"
    _shot(staff, "explorer-include-refused")
    staff.goto(f"{live_server.url}/curation/agreement/")
    note = staff.inner_text("#excluded-conversation")
    assert note.startswith("2 fully reviewed items left out")
    assert "— 0 items" in staff.inner_text("#agreement-conversation h2")
    _shot(staff, "agreement-excluded-note")

    # Annotator A: only their own verdicts, and the two conversations read alike.
    a = login(browser, live_server, annotator_a.username)
    a.goto(f"{live_server.url}/curation/explore/conversation/")
    assert a.eval_on_selector_all("#explore-table td .badge[title]", "els => els.map(e => e.title)") == ["you", "you"]
    assert "Reject" not in a.inner_text("#explore-table")  # B's verdict on the disputed one
    _shot(a, "explorer-annotator")

    # The queue page: u withdraws the last verdict while the item still waits for reviews.
    build_lineage(conversations=1, seed=1)
    services.items_sync()
    fresh = ReviewItem.objects.filter(stage=ReviewStage.PROCEDURE, review_count=0).order_by("-pk").first()
    _review(annotator_a, fresh, "accept")
    connections.close_all()
    a.goto(f"{live_server.url}/curation/queue/")
    a.wait_for_selector('html[data-queue-keys="ready"]', state="attached")
    _shot(a, "queue-undo")
    a.keyboard.press("u")
    a.wait_for_url(f"**/curation/items/{fresh.pk}/")
    assert "withdrawn" in a.inner_text(".messages")
    assert not ReviewItem.objects.get(pk=fresh.pk).review_count
    connections.close_all()

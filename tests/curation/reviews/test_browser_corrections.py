"""Issue #31 item 5 in Chromium: an adjudicator corrects a flowgraph node and a conversation turn."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connections

from curation.models import ArtifactVersion, CorrectionMark, ReviewItem, ReviewStage
from curation.reviews import services
from generation.models import Conversation, Flowgraph
from tests.curation.factories import build_lineage
from tests.curation.reviews.test_browser import CHROMIUM, browser, login  # noqa: F401 - fixture
from tests.curation.reviews.test_corrections import disagree

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]
SHOTS = Path(__file__).resolve().parents[3] / "var" / "screenshots"


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1280, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(SHOTS / f"i31c-{name}-{width}.png"), full_page=True)


def node_row(page, node_id):
    return page.locator("#node-rows .node-row").filter(has=page.locator(f'input[data-field="id"][value="{node_id}"]'))


def test_correct_flowgraph_node_and_conversation_turn(browser, live_server, annotator_a, annotator_b, adjudicator):  # noqa: F811
    lin = build_lineage(conversations=1)
    services.items_sync()
    fg_item = disagree(ReviewStage.FLOWGRAPH, annotator_a, annotator_b)
    cv_item = disagree(ReviewStage.CONVERSATION, annotator_a, annotator_b)

    j = login(browser, live_server, adjudicator.username)
    j.goto(f"{live_server.url}/curation/adjudication/{fg_item.pk}/")
    j.click("#btn-correct")
    j.wait_for_selector('html[data-correct-ready="1"]', state="attached")
    assert j.locator("#findings .ok").count() == 1
    # A live finding: N3 becomes a plain message, so it is a leaf that is not an end.
    node_row(j, "N3").locator('select[data-field="type"]').select_option("message")
    j.wait_for_selector('#findings code:text("FG-LEAF-END")')
    assert node_row(j, "N3").locator(".row-finding").count() >= 1
    assert "Structural change" in j.locator("#change-kind").inner_text()
    shot(j, "flowgraph-finding")
    node_row(j, "N3").locator('select[data-field="type"]').select_option("end_message")
    node_row(j, "N1").locator('input[data-field="label"]').fill("Could you give me your <b>order</b> number?")
    j.wait_for_selector("#findings .ok")
    assert "Text-only change" in j.locator("#change-kind").inner_text()
    j.fill("#correct-note", "Clearer question")
    j.click("#btn-save-correction")
    j.wait_for_selector(".messages")
    assert "Saved version 2" in j.locator(".messages").inner_text()
    assert j.locator("#versions li[data-version]").count() == 2
    assert "saw version 1" in j.locator("#review-versions").inner_text()
    assert j.locator("#marked li").count() == 2 and j.locator("#marked b").count() == 0
    assert j.locator("#node-rows b").count() == 0  # typed markup stays text
    shot(j, "flowgraph-saved")
    label = next(n["label"] for n in Flowgraph.objects.get(pk=lin.flowgraph.pk).data["nodes"] if n["id"] == "N1")
    assert label == "Could you give me your <b>order</b> number?"

    j.goto(f"{live_server.url}/curation/adjudication/{cv_item.pk}/")
    assert "Review again" in j.locator("#correction-marks").inner_text()
    shot(j, "adjudicate-marked")
    j.click("#btn-correct")
    j.wait_for_selector('html[data-correct-ready="1"]', state="attached")
    turns = j.locator("#turn-rows .turn-row")
    n = turns.count()
    turns.nth(n - 1).locator('select[data-field="role"]').select_option("user")  # ends with the user
    j.wait_for_selector('#findings code:text("CV-LAST-ASSISTANT")')
    assert turns.nth(n - 1).locator(".row-finding").count() >= 1
    turns.nth(n - 1).locator('select[data-field="role"]').select_option("assistant")
    turns.nth(n - 1).locator("textarea").fill("All done. Is there anything else I can help with?")
    j.wait_for_selector("#findings .ok")
    j.fill("#correct-note", "Closing line")
    shot(j, "conversation-edit")
    j.click("#btn-save-correction")
    j.wait_for_selector(".messages")
    assert j.locator("#versions li[data-version]").count() == 2
    shot(j, "conversation-saved")
    assert Conversation.objects.get(pk=lin.conversations[0].pk).messages[-1]["content"].startswith("All done.")
    assert ArtifactVersion.objects.count() == 4 and CorrectionMark.objects.count() == 2
    assert ReviewItem.objects.get(pk=cv_item.pk).review_count == 2
    connections.close_all()


def test_annotator_sees_the_corrections_on_the_review_page_and_the_queue(browser, live_server, annotator_a, admin_user):  # noqa: F811
    import copy

    from curation.reviews import corrections
    from tests.curation.reviews.test_browser import shots

    lin = build_lineage(conversations=2)
    services.items_sync()
    data = copy.deepcopy(lin.flowgraph.data)
    next(n for n in data["nodes"] if n["id"] == "N1")["label"] = "What is your order number?"
    corrections.correct(editor=admin_user, item_id=ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH).pk,
                        payload=data, note="private note of the adjudicator")
    cv_item = ReviewItem.objects.filter(stage=ReviewStage.CONVERSATION).order_by("pk").first()
    ReviewItem.objects.filter(stage=ReviewStage.CONVERSATION).exclude(pk=cv_item.pk).update(required_reviews=1)
    a = login(browser, live_server, annotator_a.username)
    a.goto(f"{live_server.url}/curation/queue/")
    a.click("#next-flowgraph")
    a.wait_for_selector("#correction-notice")
    assert "you review version 2" in a.locator("#correction-notice").inner_text()
    shots(a, "i31c-review-corrected")
    a.goto(f"{live_server.url}/curation/queue/")
    a.click("#next-conversation")
    a.wait_for_selector("#correction-notice")
    assert "Marked for review again because its parent flowgraph was corrected" in a.locator("#correction-notice").inner_text()
    a.goto(f"{live_server.url}/curation/queue/")
    assert a.locator("#held .correction-held").count() == 2
    assert "private note" not in a.content()
    shots(a, "i31c-queue-corrected")
    connections.close_all()

"""Webhooks and the own-agent page in a real browser, with 1400 px screenshots under
var/screenshots/: register a webhook, copy its secret once, send a test event, read the log."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connections

from tests.curation.reviews.test_browser import CHROMIUM, browser, login  # noqa: F401 - fixture
from tests.webhooks.receiver import Receiver
from webhooks import services
from webhooks.models import Delivery

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]
SHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / name), full_page=True)


def test_register_a_webhook_and_send_a_test_event(browser, live_server, admin_user, settings):  # noqa: F811
    settings.WEBHOOK_BACKOFF_BASE = 0.01
    page = login(browser, live_server, admin_user.username)
    page.set_viewport_size({"width": 1400, "height": 900})
    try:
        with Receiver() as receiver:
            page.goto(f"{live_server.url}/webhooks/")
            page.fill("#id_name", "CI pipeline <script>alert(1)</script>")
            page.fill("#id_url", receiver.url)
            page.check("input[value='release.created']")
            page.check("input[value='evaluation.finished']")
            with page.expect_navigation():
                page.click("text=Register the webhook")
            secret = page.inner_text("#webhook-secret")
            assert secret.startswith("whsec_") and "shown only this once" in page.content()
            shot(page, "webhook-secret-once.png")
            receiver.secret = secret
            with page.expect_navigation():
                page.click("text=Go to the webhook")
            assert secret not in page.content()
            with page.expect_navigation():
                page.click("text=Send test event")
            for pk in Delivery.objects.values_list("pk", flat=True):
                services.deliver_inline(delivery_id=pk, sleep=lambda s: None)
            page.reload()
            log = page.inner_text("table")
            assert "webhook.test" in log and "HTTP 200" in log and "Delivered" in log
            assert receiver.received and receiver.received[0]["valid"]
            shot(page, "webhook-detail.png")
            page.goto(f"{live_server.url}/webhooks/")
            assert secret not in page.content() and "<script>alert(1)</script>" in page.inner_text("table")
            shot(page, "webhook-list.png")
    finally:
        connections.close_all()


def test_own_agent_page(browser, live_server, researcher):  # noqa: F811
    from evaluation import agent_kinds
    from tests.evaluation.conftest import make_release

    make_release()
    agent_kinds.agent_create_http(name="support-bot", url="http://127.0.0.1:8808/", api_key_env="SUPPORT_BOT_API_KEY")
    page = login(browser, live_server, researcher.username)
    page.set_viewport_size({"width": 1400, "height": 900})
    try:
        page.goto(f"{live_server.url}/evaluation/agents/")
        with page.expect_navigation():
            page.click("text=Your own agent")
        assert "support-bot" in page.inner_text("table") and "SUPPORT_BOT_API_KEY" in page.inner_text("table")
        page.fill("#own_system_prompt", "You are Shopbot.")
        page.fill("#own_name", "shopbot")
        with page.expect_navigation():
            page.click("text=Create the agent")
        assert "shopbot" in page.inner_text("table")
        shot(page, "own-agents.png")
    finally:
        connections.close_all()

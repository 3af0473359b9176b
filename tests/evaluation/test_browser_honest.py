"""A broken HTTP agent in a real browser (issue #27): the run page says the run failed, why, and
that it is incomplete; the Agents page's Check says the connection failed. 1400 px screenshots
under var/screenshots/."""
from __future__ import annotations

import pytest

from evaluation import agent_kinds, services
from tests.curation.reviews.test_browser import CHROMIUM, browser, login  # noqa: F401 - fixture
from tests.evaluation.conftest import make_release
from tests.evaluation.test_browser_metrics import shot
from tests.evaluation.test_honest_runs import dead_url

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]


def test_a_run_against_a_dead_agent_and_its_check(browser, live_server, researcher):  # noqa: F811
    agent = agent_kinds.agent_create_http(name="down bot", url=dead_url(), retries=0, timeout=2)
    run = services.run_execute_inline(run=services.run_create(agent=agent, release=make_release(),
                                                              similarity="lexical", start=False), workers=1)
    page = login(browser, live_server, researcher.username)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}/evaluation/runs/{run.pk}/")
    card = page.inner_text("#run-status")
    assert "Failed" in card and "stopped after 5 consecutive tests without an answer" in card
    assert "Complete: no — 10 test(s) got no answer and 0 an unreadable one, of 10 (100.0 %" in card
    shot(page, "evaluation_run_dead_agent")
    page.goto(f"{live_server.url}/evaluation/agents/")
    page.locator(f"form[action='/evaluation/agents/{agent.pk}/check'] button").click()
    page.wait_for_load_state()
    text = page.inner_text("main")
    assert "down bot: no answer: connection failed" in text and "answered in" not in text
    shot(page, "evaluation_agent_check_dead_port")
    assert errors == []

"""The new report sections and the API graph page in a real browser, with 1400 px screenshots
under var/screenshots/: an incomplete run (both figures), repeated trials, actions and DST."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from evaluation import services
from evaluation.models import AgentMode
from evaluation.services import lifecycle
from generation.models import Api, Intent, Procedure
from tests.curation.reviews.test_browser import CHROMIUM, browser, login  # noqa: F401 - fixture
from tests.evaluation.conftest import make_release, which_test
from tests.evaluation.test_dialogue_and_trials import PLAN, TRIAL_TESTS
from tests.fake_openai import Reply, fake_openai, openai_settings  # noqa: F401 - fixtures

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]
SHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 900})
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_trials_actions_dst_and_incomplete_run_pages(browser, live_server, researcher, fake_openai,  # noqa: F811
                                                     openai_settings, monkeypatch):
    asked = Counter()

    def handler(body, n):
        if "report the dialogue state" in body["messages"][0]["content"]:
            return Reply(content=json.dumps({"api": "get_order_details", "slots": {}}))
        t = which_test(body)
        if t == 10 and asked[t] == 2:
            asked[t] += 1
            return Reply.client_error(400, "context too long")  # the last trial of t10 fails
        answer = PLAN[t][asked[t]]
        asked[t] += 1
        return Reply(content=json.dumps(answer))

    fake_openai.set_handler(handler)
    monkeypatch.setattr(lifecycle.random, "choice", lambda seq: seq[0])
    agent = services.agent_create(name="varied", mode=AgentMode.PROMPT, model="fake-model", temperature=0.7)
    run = services.run_execute_inline(run=services.run_create(
        agent=agent, release=make_release(tests=TRIAL_TESTS), similarity="lexical", trials=3, dst=True,
        start=False), workers=1)
    page = login(browser, live_server, researcher.username)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}/evaluation/runs/{run.pk}/")
    text = page.inner_text("main")
    assert "API comparison: API and parameter names exactly" in text
    assert "pass^3" in text and "Action prediction" in text and "Joint goal accuracy" in text
    shot(page, "evaluation_run_trials_actions_dst")
    page.goto(f"{live_server.url}/evaluation/compare/?runs={run.pk}")
    assert "pass^2" in page.inner_text("main")
    shot(page, "evaluation_compare_trials")
    assert errors == []


def test_api_graph_page(browser, live_server, researcher, drawing_worker):  # noqa: F811
    intent = Intent.objects.create(key="i", client="shop", issue="late", name="late order")
    proc = Procedure.objects.create(key="p", intent=intent, title="P", text="text")
    for key, name, params, out in [("a", "find_user_id_by_email", [{"name": "email", "type": "str"}], "user_id"),
                                   ("b", "get_user_details", [{"name": "user_id", "type": "str"}], "user"),
                                   ("c", "get_order_details", [{"name": "order_id", "type": "str"}], "order"),
                                   ("d", "cancel_order", [{"name": "order_id", "type": "str"}], "order")]:
        Api.objects.create(key=key, procedure=proc, name=name, parameters=params, output_name=out, output_type="dict")
    page = login(browser, live_server, researcher.username)
    page.goto(f"{live_server.url}/generation/api-graph/", timeout=90000)  # the first use loads MiniLM
    page.wait_for_selector("figure.api-graph svg")
    assert "user_id → user_id" in page.inner_text("main")
    shot(page, "api_graph")

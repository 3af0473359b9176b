"""The launch form and a job page in a real browser: temperatures, cache switch, repaired and lost calls."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connections

from generation import llm, services
from generation.llm import accounting
from generation.models import LLMCall, StageProgress
from tests.curation.reviews.test_browser import CHROMIUM, browser, login  # noqa: F401 - the browser fixture
from tests.fake_openai import Reply, fail_then_repair, point_settings_at
from tests.generation.scripts import BAD_FLOWGRAPH, JOB_CONFIG, MARKERS, StageScript

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]


def shot(page, name: str) -> None:
    folder = Path(django_settings.BASE_DIR) / "var" / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 900})
    page.screenshot(path=str(folder / name), full_page=True)


def test_launch_form_and_job_page(browser, live_server, admin_user, settings, fake_openai):  # noqa: F811
    point_settings_at(settings, fake_openai, api_key="sk-browser-secret-0123456789")
    fake_openai.set_handler(fail_then_repair(
        StageScript(), lambda body: Reply(content=BAD_FLOWGRAPH),
        when=lambda body: MARKERS["flowgraph"] in "\n".join(m["content"] for m in body["messages"])))
    job = services.job_run_inline(job=services.job_create(config={**JOB_CONFIG, "intents": 2}, enqueue=False))
    # One call whose worker died: lost in flight, its prompt estimated.
    LLMCall.objects.create(job=job, stage="conversations", model="gpt-4o", prompt_hash="h", outcome="in_flight",
                           prompt_tokens=321, tokens_estimated=True, key="conversations:9:9",
                           worker=f"{accounting.HOST}:999999")
    assert llm.calls_mark_lost() == 1
    repaired = StageProgress.objects.get(job=job, stage="flowgraph").repaired
    assert repaired >= 1
    connections.close_all()

    page = login(browser, live_server, admin_user.username)
    page.goto(f"{live_server.url}/generation/")
    page.click("text=Temperature per stage and cache")
    assert page.is_visible('input[name="temperature_procedures"]') and page.is_checked('input[name="cache"]')
    shot(page, "generation-launch-form.png")
    page.fill('input[name="seed"]', "99999999999999999999999")
    page.fill('input[name="intents"]', "2")
    # The browser itself refuses the number (the form field's max); the server refuses it too (test_bounds).
    assert page.eval_on_selector('input[name="seed"]', "e => e.max") == "2147483647"
    assert page.eval_on_selector('input[name="seed"]', "e => !e.checkValidity()")

    page.goto(f"{live_server.url}/generation/jobs/{job.pk}/")
    text = page.inner_text("main") if page.query_selector("main") else page.inner_text("body")
    assert "Repaired" in text and "lost in flight" in text and "estimated" in text
    assert "sk-browser-secret" not in page.content()
    shot(page, "generation-job-page.png")
    page.context.close()


def test_estimate_follows_the_form_and_the_job_page_shows_chains_resamples_and_rates(  # noqa: F811
        browser, live_server, admin_user, settings, fake_openai):
    from tests.fake_openai import with_faults
    from tests.generation.test_multi_api import CHAIN_APIS
    from tests.generation.test_resample_cost import first_conversation_stuck

    point_settings_at(settings, fake_openai, LLM_CACHE=False, LLM_BACKOFF_BASE=0.01)
    stuck = first_conversation_stuck(StageScript(), "flowgraph", Reply(content=BAD_FLOWGRAPH))
    fake_openai.set_handler(with_faults(stuck, rate=0.2, seed=4, faults=[Reply.rate_limited(0.01)]))
    config = {**JOB_CONFIG, "intents": 2, "api_chains": {"apis": CHAIN_APIS, "length": 2, "count": 2},
              "cost_limit": 50}
    job = services.job_run_inline(job=services.job_create(config=config, enqueue=False))
    assert job.status == "succeeded", job.error
    assert StageProgress.objects.get(job=job, stage="flowgraph").resampled >= 1
    assert LLMCall.objects.filter(job=job, status_code=429).exists()
    connections.close_all()

    page = login(browser, live_server, admin_user.username)
    page.goto(f"{live_server.url}/generation/")
    assert "Give a number of intents" in page.inner_text("#job-estimate")
    page.fill('input[name="intents"]', "20")
    page.select_option('select[name="conversations"]', "llm")
    # 2 A.1 calls, 20 x (A.2, A.3, A.4) and 20 x 2 A.6 conversations.
    page.wait_for_function("document.querySelector('#job-estimate').innerText.includes('about 102 LLM calls')")
    page.fill('input[name="cost_limit"]', "5")
    page.click("text=Multi-API seeding")
    assert page.is_visible('input[name="api_chains"]')
    shot(page, "generation-launch-estimate.png")

    page.goto(f"{live_server.url}/generation/jobs/{job.pk}/")
    text = page.inner_text("body")
    assert "API chains" in text and "find_user_id_by_email → get_user_details" in text
    assert "Resampled" in text and "of the $50.00 limit" in text
    assert page.query_selector("svg.rate-chart") is not None and "answered 429" in text
    shot(page, "generation-job-chains-rates.png")
    page.context.close()

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

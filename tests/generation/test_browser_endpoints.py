"""The endpoint test and a batch-mode job page in a real browser (#32 items 4 and 5)."""
from __future__ import annotations

import pytest
from django.db import connections
from django.utils import timezone

from generation.models import BatchRequest, GenerationJob, LLMBatch, LLMCall
from tests.curation.reviews.test_browser import CHROMIUM, browser, login  # noqa: F401 - the browser fixture
from tests.fake_openai import FakeOpenAI, Reply, point_settings_at
from tests.generation.test_browser import shot

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]
KEY = "azure-browser-secret-0123456789"


def test_endpoint_test_and_batch_job_page(browser, live_server, admin_user, settings):  # noqa: F811
    with FakeOpenAI(lambda body, n: Reply(content='{"ok": true}'), azure=True) as fake:
        point_settings_at(settings, fake, api_key=KEY, OPENAI_BASE_URL=f"http://127.0.0.1:{fake.port}",
                          OPENAI_PROVIDER="azure", OPENAI_API_VERSION="2024-10-21")
        job = GenerationJob.objects.create(name="batched", config={"batch": True, "intents": 1}, status="succeeded",
                                           started_at=timezone.now(), finished_at=timezone.now())
        batch = LLMBatch.objects.create(job=job, endpoint="http://x", remote_id="batch_abc", status="done",
                                        remote_status="expired", requests=6, succeeded=4, expired=2)
        LLMCall.objects.create(job=job, stage="intents", model="d", prompt_hash="h", batch=batch, output_form="schema",
                               key="intents:0:")
        BatchRequest.objects.create(job=job, digest="h", stage="intents", key="intents:0:", state="done")
        connections.close_all()
        page = login(browser, live_server, admin_user.username)
        page.goto(f"{live_server.url}/generation/")
        page.click("text=Test the endpoint")
        page.wait_for_selector("#endpoint-result")
        result = page.inner_text("#endpoint-result")
        assert "Azure OpenAI" in result and "available: JSON stages send their schema" in result
        assert "available: batch mode can be used" in result and KEY not in page.content()
        shot(page, "generation-endpoint-test.png")
        page.goto(f"{live_server.url}/generation/jobs/{job.pk}/")
        text = page.inner_text("body")
        assert "Batches" in text and "batch_abc" in text and "schema · batch" in text
        shot(page, "generation-batch-job.png")
        page.context.close()

"""Azure OpenAI next to any OpenAI-compatible base URL (#32 item 5), and the endpoint test on the
jobs page: the provider detected, structured outputs and batches, never the key."""
from __future__ import annotations

import json

import pytest
from django.urls import reverse

from generation import llm
from generation.llm import batches, capabilities
from generation.llm.providers import provider_for
from generation.models import BatchRequest, EndpointCapability, GenerationJob, LLMBatch, LLMCall
from generation.stages.schemas import schema_for
from tests.fake_openai import FakeOpenAI, Reply, point_settings_at

pytestmark = pytest.mark.django_db
KEY = "azure-secret-key-0123456789"
GOOD = json.dumps({"messages": [{"role": "user", "content": "hi"}]})


def _azure(settings, fake, **extra):
    values = {"OPENAI_BASE_URL": f"http://127.0.0.1:{fake.port}", "OPENAI_PROVIDER": "azure",
              "OPENAI_API_VERSION": "2024-10-21", "LLM_CACHE": False, **extra}
    point_settings_at(settings, fake, api_key=KEY, **values)


def test_provider_detected_from_the_host(settings):
    settings.OPENAI_PROVIDER = "auto"
    assert provider_for("https://my-res.openai.azure.com") == "azure"
    assert provider_for("https://my-res.cognitiveservices.azure.com/openai") == "azure"
    assert provider_for("https://api.openai.com/v1") == "openai"
    assert provider_for("http://127.0.0.1:8000/v1") == "openai"
    settings.OPENAI_PROVIDER = "azure"
    assert provider_for("http://127.0.0.1:8000") == "azure"


def test_azure_deployment_api_version_and_api_key_header(settings):
    with FakeOpenAI(lambda body, n: Reply(content=GOOD), azure=True) as fake:
        _azure(settings, fake)
        result = llm.chat(stage="conversations", messages=[{"role": "user", "content": "x"}], model="convo-deploy",
                          response_format={"type": "json_object"}, schema=schema_for("A.6"))
        assert result.content == GOOD
        assert fake.deployments == ["convo-deploy"]  # the model name is the deployment, in the path
        headers = {k.lower(): v for k, v in fake.headers[0].items()}
        assert headers["api-key"] == KEY and "authorization" not in headers
        assert fake.requests[0]["response_format"]["type"] == "json_schema"
        # The same client against a plain OpenAI-style URL is refused by an Azure server (no api-version).
        settings.OPENAI_PROVIDER = "openai"
        settings.OPENAI_BASE_URL = fake.base_url
        with pytest.raises(llm.LLMFailed, match="HTTP 40"):
            llm.chat(stage="procedures", messages=[{"role": "user", "content": "y"}], model="convo-deploy")


def test_azure_without_api_version_says_so(settings):
    with FakeOpenAI(azure=True) as fake:
        _azure(settings, fake, OPENAI_API_VERSION="")
        with pytest.raises(llm.LLMUnavailable, match="OPENAI_API_VERSION"):
            llm.chat(stage="procedures", messages=[{"role": "user", "content": "y"}], model="d")


def test_azure_batch_round_trip(settings):
    """A request through Azure's /openai/files and /openai/batches, read back at the batch price."""
    with FakeOpenAI(lambda body, n: Reply(content=GOOD, prompt_tokens=1000, completion_tokens=100),
                    azure=True) as fake:
        _azure(settings, fake, LLM_PRICES="d=2/10")
        job = GenerationJob.objects.create(name="b", status="running")
        ask = dict(stage="conversations", messages=[{"role": "user", "content": "z"}], model="d", job=job, key="k",
                   response_format={"type": "json_object"}, batch=True, use_cache=False)
        with pytest.raises(llm.LLMDeferred):
            llm.chat(**ask)
        rerun, more = batches.batches_poll()  # submitted; the fake's batch moves to in_progress
        assert rerun == [] and more and LLMBatch.objects.get().remote_status == "in_progress"
        with pytest.raises(llm.LLMDeferred):
            llm.chat(**ask)  # still waiting: nothing is sent again
        rerun, more = batches.batches_poll()  # completed and read
        assert rerun == [(job.pk, "conversations", "k")] and not more
        result = llm.chat(**ask)
        assert result.content == GOOD and fake.batch_store.lines[0]["model"] == "d"
        call = LLMCall.objects.get()
        assert call.batch_id == LLMBatch.objects.get().pk and call.outcome == "ok"
        assert str(call.cost_usd) == "0.001500"  # (1000 × 2 + 100 × 10) / 1e6 = 0.003, halved
        assert fake.request_count == 0  # no online chat request


def test_endpoint_test_page(settings, client, admin_user, annotator_a):
    with FakeOpenAI(lambda body, n: Reply(content='{"ok": true}'), azure=True) as fake:
        _azure(settings, fake)
        url = reverse("generation:endpoint_test")
        assert client.post(url).status_code == 302  # anonymous: to the login page
        client.force_login(annotator_a)
        assert client.post(url).status_code == 403
        client.force_login(admin_user)
        assert client.get(url).status_code == 405
        page = client.post(url).content.decode()
    assert "Azure OpenAI" in page and "api-version 2024-10-21" in page
    assert "available: JSON stages send their schema" in page and "available: batch mode can be used" in page
    assert KEY not in page
    # Remembered for the calls, without the key anywhere in the database.
    assert capabilities.structured_outputs(settings.OPENAI_BASE_URL, settings.LLM_STAGE_MODELS["conversations"])
    assert capabilities.batches_available(settings.OPENAI_BASE_URL) is True
    for model in (EndpointCapability, LLMCall, BatchRequest, LLMBatch):
        assert KEY not in json.dumps(list(model.objects.values()), default=str)


def test_endpoint_test_reports_what_a_plain_server_lacks(settings, client, admin_user):
    with FakeOpenAI(lambda body, n: Reply(content='{"ok": true}'), structured_outputs="refuse",
                    batches=False) as fake:
        point_settings_at(settings, fake, api_key=KEY)
        client.force_login(admin_user)
        page = client.post(reverse("generation:endpoint_test")).content.decode()
    assert "OpenAI-compatible base URL" in page and "not available: JSON stages ask by the prompt" in page
    assert "the endpoint has no /batches (HTTP 404)" in page and KEY not in page


def test_endpoint_test_unreachable_is_a_short_message(settings, client, admin_user):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    settings.OPENAI_PROVIDER = "openai"
    client.force_login(admin_user)
    response = client.post(reverse("generation:endpoint_test"))
    assert response.status_code == 200 and "could not reach the endpoint" in response.content.decode()

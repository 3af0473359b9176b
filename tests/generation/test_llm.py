"""The LLM layer against the real local fake server: retries, caching, logging, concurrency, cost."""
from __future__ import annotations

import threading
import time
from decimal import Decimal

import pytest

from generation import llm
from generation.models import GenerationJob, LLMCall
from tests.fake_openai import FakeOpenAI, Reply, fake_openai, openai_settings, point_settings_at, scripted  # noqa: F401

MSG = [{"role": "user", "content": "hello"}]


@pytest.fixture
def fast(settings, fake_openai):
    return point_settings_at(settings, fake_openai, LLM_MAX_RETRIES=3, OPENAI_TIMEOUT=0.4, LLM_CACHE=False)


@pytest.mark.django_db
def test_ok_call_is_logged_without_the_key(fast, fake_openai, settings):
    settings.LLM_PRICES = "m1=2/10"
    fake_openai.set_handler(lambda body, n: Reply(content="hi", prompt_tokens=1000, completion_tokens=100))
    job = GenerationJob.objects.create(name="j")
    result = llm.chat(stage="intents", messages=MSG, model="m1", job=job, key="k1", template="A.1",
                      template_version="v1", response_format={"type": "json_object"})
    assert result.content == "hi" and not result.cached
    assert (result.prompt_tokens, result.completion_tokens) == (1000, 100)
    call = LLMCall.objects.get()
    assert call.outcome == "ok" and call.template == "A.1" and call.template_version == "v1"
    assert call.request["messages"] == MSG and call.request["response_format"] == {"type": "json_object"}
    assert "sk-fake-test-key" not in str(call.request) and "api_key" not in call.request
    assert call.cost_usd == Decimal("0.003")  # 1000 × 2/1e6 + 100 × 10/1e6
    job.refresh_from_db()
    assert (job.prompt_tokens, job.completion_tokens, job.cost_usd) == (1000, 100, Decimal("0.003"))
    # the key travelled only as the Authorization header
    assert {k.lower(): v for k, v in fake_openai.headers[0].items()}["authorization"] == "Bearer sk-fake-test-key"


@pytest.mark.django_db
def test_transient_faults_are_retried_and_recorded(fast, fake_openai):
    fake_openai.set_handler(scripted([Reply.rate_limited(0.2), Reply.server_error(502), Reply.truncated(), "done"]))
    start = time.monotonic()
    result = llm.chat(stage="apis", messages=MSG, model="m")
    assert result.content == "done"
    assert time.monotonic() - start >= 0.2  # waited the retry-after
    calls = list(LLMCall.objects.order_by("id"))
    assert [c.outcome for c in calls] == ["retried", "retried", "retried", "ok"]
    assert [c.attempt for c in calls] == [1, 2, 3, 4]
    assert "429" in calls[0].error and "502" in calls[1].error and "unreadable" in calls[2].error


@pytest.mark.django_db
def test_timeout_is_retried(fast, fake_openai):
    fake_openai.set_handler(scripted([Reply.slow(1.0), "after timeout"]))
    assert llm.chat(stage="apis", messages=MSG, model="m").content == "after timeout"
    assert list(LLMCall.objects.values_list("outcome", "error")) == [("retried", "timeout"), ("ok", "")]


@pytest.mark.django_db
def test_other_4xx_is_not_retried(fast, fake_openai):
    fake_openai.set_handler(lambda body, n: Reply.client_error(400, "model not found"))
    with pytest.raises(llm.LLMFailed, match="HTTP 400.*not retried"):
        llm.chat(stage="apis", messages=MSG, model="m")
    assert fake_openai.request_count == 1
    assert LLMCall.objects.get().outcome == "error"


@pytest.mark.django_db
def test_retries_are_capped(fast, fake_openai):
    fake_openai.set_handler(lambda body, n: Reply.server_error(500))
    with pytest.raises(llm.LLMFailed, match="after 4 attempts"):
        llm.chat(stage="apis", messages=MSG, model="m")
    assert fake_openai.request_count == 4
    assert list(LLMCall.objects.values_list("outcome", flat=True)) == ["retried"] * 3 + ["error"]


@pytest.mark.django_db
def test_cache_reuses_ok_reply_and_is_switchable(fast, fake_openai, settings):
    settings.LLM_CACHE = True
    fake_openai.set_handler(lambda body, n: Reply(content=f"reply {n}"))
    first = llm.chat(stage="apis", messages=MSG, model="m", temperature=0.5, validated=True)
    second = llm.chat(stage="apis", messages=MSG, model="m", temperature=0.5)
    assert (first.content, second.content, second.cached) == ("reply 0", "reply 0", True)
    assert fake_openai.request_count == 1
    assert LLMCall.objects.filter(outcome="cached").count() == 1
    # different parameters → a different cache key
    assert llm.chat(stage="apis", messages=MSG, model="m", temperature=0.9).content == "reply 1"
    assert llm.chat(stage="apis", messages=MSG, model="m", temperature=0.5, use_cache=False).content == "reply 2"


@pytest.mark.django_db
def test_no_endpoint(settings):
    settings.OPENAI_BASE_URL = ""
    with pytest.raises(llm.LLMUnavailable, match="OPENAI_BASE_URL"):
        llm.chat(stage="intents", messages=MSG)


@pytest.mark.django_db
def test_tool_calls(fast, fake_openai):
    fake_openai.set_handler(lambda body, n: Reply(tool_calls=[{"name": "get_order", "arguments": {"order_id": 3}}]))
    tools = [{"type": "function", "function": {"name": "get_order", "parameters": {"type": "object"}}}]
    result = llm.chat(stage="evaluation", messages=MSG, model="m", tools=tools)
    assert result.tool_calls == [{"name": "get_order", "arguments": '{"order_id": 3}'}]
    assert fake_openai.requests[0]["tools"] == tools


@pytest.mark.django_db(transaction=True)
def test_concurrency_is_bounded_per_endpoint(settings):
    with FakeOpenAI(latency=0.15) as fake:
        point_settings_at(settings, fake, LLM_MAX_CONCURRENCY=2, LLM_CACHE=False)
        threads = [threading.Thread(target=llm.chat, kwargs={"stage": "x", "messages": MSG, "model": "m"})
                   for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert fake.request_count == 6
        assert fake.peak_in_flight == 2

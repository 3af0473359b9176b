"""The fake OpenAI server speaks the protocol the official client expects, faults included."""
from __future__ import annotations

import threading
import time

import openai
import pytest
from openai import OpenAI

from tests.fake_openai import FakeOpenAI, Reply, by_stage, fake_openai, scripted  # noqa: F401


def client(fake: FakeOpenAI, timeout: float = 2.0) -> OpenAI:
    return OpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0, timeout=timeout)


def ask(c: OpenAI, text: str = "hi"):
    return c.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])


def test_content_tool_calls_and_usage(fake_openai):
    fake_openai.set_handler(scripted([Reply(content="hello", prompt_tokens=7, completion_tokens=3),
                                      Reply(tool_calls=[{"name": "lookup", "arguments": {"id": 1}}])]))
    c = client(fake_openai)
    first = ask(c)
    assert first.choices[0].message.content == "hello"
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (7, 3)
    second = ask(c)
    call = second.choices[0].message.tool_calls[0]
    assert call.function.name == "lookup" and call.function.arguments == '{"id": 1}'
    assert fake_openai.requests[0]["messages"][0]["content"] == "hi"


def test_faults(fake_openai):
    fake_openai.set_handler(scripted([Reply.rate_limited(0.3), Reply.server_error(503), Reply.client_error(400),
                                      Reply.slow(1.0), Reply.truncated()]))
    c = client(fake_openai, timeout=0.3)
    with pytest.raises(openai.RateLimitError) as e:
        ask(c)
    assert e.value.response.headers["retry-after"] == "0.3"
    with pytest.raises(openai.InternalServerError):
        ask(c)
    with pytest.raises(openai.BadRequestError):
        ask(c)
    with pytest.raises(openai.APITimeoutError):
        ask(c)
    with pytest.raises(Exception):
        ask(c)


def test_routing_by_prompt_marker(fake_openai):
    fake_openai.set_handler(by_stage({"alpha": "A", "beta": Reply(content="B")}))
    c = client(fake_openai)
    assert ask(c, "beta please").choices[0].message.content == "B"
    assert ask(c, "alpha").choices[0].message.content == "A"


def test_concurrency_cap_simulation():
    with FakeOpenAI(latency=0.1, max_concurrency=2) as fake:
        c = client(fake)
        threads = [threading.Thread(target=ask, args=(c,)) for _ in range(6)]
        start = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - start
    assert fake.peak_in_flight == 2
    assert 0.29 <= wall < 1.0

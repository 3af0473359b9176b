"""Checking an agent: one probe test through its own prompt, mode and parser, against the fake
OpenAI server; the outcome is told in one message on the agents page."""
from __future__ import annotations

import json

import pytest
from django.urls import reverse

from evaluation import services
from evaluation.models import Agent, AgentMode
from generation.models import LLMCall
from tests.conftest import PASSWORD
from tests.fake_openai import Reply, fake_openai, openai_settings  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db


def agent(mode=AgentMode.PROMPT):
    return services.agent_create(name=f"probe-{mode}", mode=mode, model="fake-model")


def test_a_reply_in_the_json_format(fake_openai, openai_settings):
    fake_openai.set_handler(lambda body, n: Reply(content=json.dumps(
        {"type": "reply", "parameters": {"content": "Could I have your order id?"}})))
    ok, message = services.agent_check(agent())
    assert ok and "with a reply" in message and "Could I have your order id?" in message
    system = fake_openai.requests[0]["messages"][0]["content"]
    assert "<procedure>" in system and "get_order_details" in system  # the run's own prompt
    assert LLMCall.objects.filter(stage="evaluation").count() == 1


def test_a_function_call(fake_openai, openai_settings):
    fake_openai.set_handler(lambda body, n: Reply(tool_calls=[{"name": "get_order_details",
                                                               "arguments": {"order_id": 1}}]))
    ok, message = services.agent_check(agent(AgentMode.FUNCTIONS))
    assert ok and "call to get_order_details" in message
    assert fake_openai.requests[0]["tools"][0]["function"]["name"] == "get_order_details"


def test_unparseable_failing_and_missing_endpoints_are_reported(fake_openai, openai_settings, settings):
    fake_openai.set_handler(lambda body, n: Reply(content="Sure! I will greet them."))
    ok, message = services.agent_check(agent())
    assert not ok and "could not be read" in message and "not a JSON object" in message
    settings.LLM_MAX_RETRIES = 1
    fake_openai.set_handler(lambda body, n: Reply.server_error(500))
    ok, message = services.agent_check(Agent.objects.get(name="probe-prompt"))
    assert not ok and "failed after retries" in message
    settings.OPENAI_BASE_URL = ""
    ok, message = services.agent_check(Agent.objects.get(name="probe-prompt"))
    assert not ok and "OPENAI_BASE_URL" in message
    ok, message = services.agent_check(services.reference_agents_ensure()[0])
    assert ok and "needs no endpoint" in message


def test_check_from_the_agents_page_escapes_the_answer(client, researcher, fake_openai, openai_settings):
    fake_openai.set_handler(lambda body, n: Reply(content=json.dumps(
        {"type": "reply", "parameters": {"content": "<img src=x onerror=alert(1)> hello"}})))
    probe = agent()
    assert client.login(username=researcher.username, password=PASSWORD)
    page = client.get(reverse("evaluation:agents")).content.decode()
    assert reverse("evaluation:agent_check", args=[probe.pk]) in page
    response = client.post(reverse("evaluation:agent_check", args=[probe.pk]), follow=True)
    html = response.content.decode()
    assert response.redirect_chain[-1][0] == reverse("evaluation:agents")
    assert "&lt;img src=x onerror=alert(1)&gt; hello" in html and "<img src=x" not in html

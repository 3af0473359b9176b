"""Agents under test: the reference agents, creating an agent, its key, asking it for an answer,
and the one-test probe of the Agents page."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from evaluation import metrics as M
from evaluation import reader as R
from evaluation.agents import PROMPT_TEMPLATE, PROMPT_VERSION, build_messages, reference_action, tools_from_apis
from evaluation.models import Agent, AgentMode
from evaluation.services.common import LLM_STAGE, EvaluationError

REFERENCE_AGENTS = [
    ("Reference: gold", AgentMode.GOLD, "Answers the expected output of every test: 100 % everywhere."),
    ("Reference: always reply", AgentMode.ALWAYS_REPLY, "Always sends the same clarifying message."),
    ("Reference: always the first API", AgentMode.FIRST_API, "Always calls the first API of the test, without parameters."),
]


@transaction.atomic
def reference_agents_ensure() -> list[Agent]:
    agents = []
    for name, mode, description in REFERENCE_AGENTS:
        agent, _ = Agent.objects.get_or_create(name=name, defaults={"mode": mode, "description": description,
                                                                   "api_key_env": ""})
        agents.append(agent)
    return agents


# Only variables named like API keys may be read: an agent's key setting must never become a
# way to send SECRET_KEY or DATABASE_URL to an endpoint of the researcher's choosing.
KEY_VARIABLE = re.compile(r"^[A-Z][A-Z0-9_]*_API_KEY$")


@transaction.atomic
def agent_create(*, name: str, mode: str = AgentMode.PROMPT, knowledge: str = Agent.Knowledge.PROCEDURE,
                 base_url: str = "", api_key_env: str = "OPENAI_API_KEY", model: str = "",
                 temperature: float = 0.0, description: str = "") -> Agent:
    api_key_env = (api_key_env or "").strip()
    if api_key_env and not KEY_VARIABLE.match(api_key_env):
        raise EvaluationError("the API key setting is the NAME of an environment variable ending in _API_KEY, "
                              "e.g. OPENAI_API_KEY")
    return Agent.objects.create(name=name, mode=mode, knowledge=knowledge, base_url=base_url.strip(),
                                api_key_env=api_key_env, model=model.strip(), temperature=temperature,
                                description=description)


def agent_api_key(agent: Agent) -> str | None:
    """The agent's key, read from the environment variable it names; None means the default
    key (the project's, else OPENAI_API_KEY). The default key is sent only to the default endpoint
    (the project's own endpoint when it has one: generation.llm.config.endpoint_base_url)."""
    from generation.llm.config import endpoint_base_url

    name = (agent.api_key_env or "").strip()
    custom = bool(agent.base_url) and agent.base_url.rstrip("/") != (endpoint_base_url() or "").rstrip("/")
    if not name or name == "OPENAI_API_KEY":
        return "" if custom else None
    if not KEY_VARIABLE.match(name):
        return ""
    return os.environ.get(name, "")


# A one-test probe of an agent: a greeting that the A.8 prompt should answer with a reply.
CHECK_TEST: dict[str, Any] = {
    "procedure": "Greet the customer, then ask for the order id before looking the order up.",
    "apis": [{"name": "get_order_details", "desc": "Look an order up by its id.",
              "params": [{"name": "order_id", "type": "int", "required": True}],
              "output": {"name": "order", "type": "dict"}}],
    "context": [{"role": "user", "content": "Hello, my order has not arrived."}],
    "expected": {"type": "reply", "content": "Could you give me your order id?"},
}


def agent_check(agent: Agent) -> tuple[bool, str]:
    """Send the agent one probe test through the same prompt, mode and parser as a run and say
    what came back: (ok, message). The call is logged like any other (stage "evaluation")."""
    from generation.llm import LLMFailed, LLMUnavailable

    if agent.is_reference:
        return True, f"{agent.name} is a built-in reference agent: it needs no endpoint."
    try:
        answer = agent_answer(agent, CHECK_TEST, key=f"check:agent{agent.pk}:{timezone.now().isoformat()}")
    except LLMUnavailable as exc:
        return False, f"{agent.name}: {exc}"
    except LLMFailed as exc:
        return False, f"{agent.name}: the endpoint failed after retries: {exc}"
    kind = answer.action.get("type")
    if R.is_outage(answer.action):
        return False, f"{agent.name}: no answer: {answer.action.get('reason', 'the connection failed')}"
    if kind == M.REPLY:
        said = str(answer.action.get("content", ""))
        return True, (f"{agent.name} answered in {answer.latency_ms} ms with a reply: "
                      f"“{said[:200]}{'…' if len(said) > 200 else ''}”")
    if kind == M.API_CALL:
        return True, (f"{agent.name} answered in {answer.latency_ms} ms with a call to {answer.action.get('name')} "
                      f"(a reply asking for the order id was expected, but the format is understood)")
    return False, (f"{agent.name} answered in {answer.latency_ms} ms, but the answer could not be read: "
                   f"{answer.action.get('reason', 'unknown format')}")


@dataclass
class Answer:
    action: dict[str, Any]
    raw: str
    latency_ms: int = 0
    call_id: int | None = None


def with_workflow(agent: Agent, data: dict[str, Any]) -> dict[str, Any]:
    """For Mermaid / pseudo-code knowledge: add the flowgraph's graph JSON when the release row
    names only its flowgraph_id (release rows do not copy the graph). Without it the agent gets
    the procedure text, and the prompt says so by its tag."""
    if agent.knowledge == Agent.Knowledge.PROCEDURE or agent.is_reference:
        return data
    if isinstance(data.get("flowgraph"), dict) or not data.get("flowgraph_id"):
        return data
    from generation.models import Flowgraph

    graph = Flowgraph.objects.filter(pk=int(data["flowgraph_id"])).values_list("data", flat=True).first() or {}
    return {**data, "flowgraph": graph} if graph.get("nodes") else data


def agent_answer(agent: Agent, data: dict[str, Any], *, key: str = "", release_id: int | None = None) -> Answer:
    """Ask the agent for its next action on one test (raises LLMUnavailable / LLMFailed)."""
    data = with_workflow(agent, data)
    if agent.mode in (AgentMode.HTTP, AgentMode.OWN_PROMPT):  # issue #18: your own agent
        from evaluation import agent_kinds

        return agent_kinds.answer(agent, data, key=key, release_id=release_id)
    if agent.is_reference:
        action = reference_action(agent.mode, data)
        return Answer(action=action, raw=json.dumps(action, ensure_ascii=False))
    from generation.llm import chat

    functions = agent.mode == AgentMode.FUNCTIONS
    result = chat(
        stage=LLM_STAGE,
        messages=build_messages(data, knowledge=agent.knowledge, functions=functions),
        model=agent.model or settings.EVALUATION_MODEL,
        temperature=agent.temperature,
        tools=tools_from_apis(data.get("apis") or []) if functions else None,
        key=key, template=PROMPT_TEMPLATE, template_version=PROMPT_VERSION,
        base_url=agent.base_url or None, api_key=agent_api_key(agent),
        # A re-evaluation asks the model again: cached answers would hide its variance.
        use_cache=False,
    )
    action, raw = read_chat_result(result, data, json_prompt=not functions)
    return Answer(action=action, raw=raw, latency_ms=result.latency_ms, call_id=result.call_id)


def read_chat_result(result, data: dict[str, Any], *, json_prompt: bool) -> tuple[dict[str, Any], str]:
    """(canonical action, raw answer) of an LLM agent's reply, by the one reader
    (evaluation/reader.py): the A.8 JSON prompt, or a chat answer (function calling, own prompt)."""
    offered = R.offered_names(data)
    if json_prompt:
        return R.read_json_prompt(result.content, offered), result.content or ""
    raw = result.content or ""
    if result.tool_calls:
        raw = json.dumps({"content": result.content, "tool_calls": result.tool_calls}, ensure_ascii=False)
    return R.read_chat(result.content, result.tool_calls, offered), raw

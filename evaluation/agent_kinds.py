"""Your own agent under test (issue #18): HTTP agents and LLM agents with their own system prompt.

* An **HTTP agent** is called with the almita-agent/1 protocol (evaluation/protocol.py,
  docs/agent-protocol.md) through :class:`evaluation.http_agent.HttpAgent`: timeout, retries on
  429/5xx, a concurrency cap (per process by a semaphore, per run by capping the run's lanes), and
  an auth header whose secret is read from the environment variable the agent names. An outage
  (no answer after the retries) leaves the test unanswered with its reason (resume retries it);
  an answer that cannot be read is unreadable, with its reason.
* An **own-prompt agent** is an OpenAI-compatible model that receives only its own stored system
  prompt, the conversation so far (OpenAI messages with tool calls and tool results) and the tools:
  no A.8 prompt, so a deployed assistant is tested as it is.

`services.agent_answer` hands both kinds here; the answer is judged like any other.
"""
from __future__ import annotations

import os
import threading
from typing import Any

from django.conf import settings
from django.db import transaction

from evaluation.agents import tools_from_apis
from evaluation.http_agent import DEFAULT_RETRIES, DEFAULT_TIMEOUT, HttpAgent, auth_headers
from evaluation.models import Agent, AgentKnowledge, AgentMode
from evaluation.protocol import openai_messages

OWN_PROMPT_TEMPLATE = "own_prompt"
KINDS = (AgentMode.HTTP, AgentMode.OWN_PROMPT)

_clients: dict[tuple, HttpAgent] = {}
_clients_lock = threading.Lock()


def _check_key_variable(name: str) -> str:
    from evaluation.services import KEY_VARIABLE, EvaluationError

    name = (name or "").strip()
    if name and not KEY_VARIABLE.match(name):
        raise EvaluationError("the secret setting is the NAME of an environment variable ending in _API_KEY, "
                              "e.g. SUPPORT_BOT_API_KEY")
    return name


@transaction.atomic
def agent_create_http(*, name: str, url: str, api_key_env: str = "", auth_header: str = "Authorization",
                      knowledge: str = AgentKnowledge.PROCEDURE, timeout: float = DEFAULT_TIMEOUT,
                      retries: int = DEFAULT_RETRIES,
                      max_concurrency: int = 8, description: str = "") -> Agent:
    from evaluation.services import EvaluationError

    url = (url or "").strip()
    if not url.startswith(("http://", "https://")):
        raise EvaluationError(f"the agent URL {url!r} must start with http:// or https://")
    if not 0 < timeout <= 600 or not 0 <= retries <= 10 or not 1 <= max_concurrency <= 64:
        raise EvaluationError("timeout must be in (0, 600] s, retries in 0..10, concurrency in 1..64")
    return Agent.objects.create(name=name, mode=AgentMode.HTTP, base_url=url, api_key_env=_check_key_variable(api_key_env),
                                auth_header=(auth_header or "Authorization").strip(), knowledge=knowledge,
                                timeout=timeout, retries=retries, max_concurrency=max_concurrency,
                                description=description)


@transaction.atomic
def agent_create_own_prompt(*, name: str, system_prompt: str, base_url: str = "", api_key_env: str = "OPENAI_API_KEY",
                            model: str = "", temperature: float = 0.0, description: str = "") -> Agent:
    from evaluation.services import EvaluationError

    if not (system_prompt or "").strip():
        raise EvaluationError("an own-prompt agent needs its system prompt")
    return Agent.objects.create(name=name, mode=AgentMode.OWN_PROMPT, system_prompt=system_prompt,
                                base_url=(base_url or "").strip(), api_key_env=_check_key_variable(api_key_env),
                                model=(model or "").strip(), temperature=temperature, description=description)


def lanes_for(agent: Agent, requested: int) -> int:
    """A run's lanes are the agent's concurrency cap at most (HTTP agents)."""
    return min(requested, agent.max_concurrency) if agent.mode == AgentMode.HTTP else requested


def release_label(release_id: int | None) -> str | None:
    """"name@version", as the portable file's header gives it to the standalone runner (one
    primary-key lookup per HTTP call; not cached, since test databases reuse primary keys)."""
    if release_id is None:
        return None
    from curation.models import Release

    row = Release.objects.filter(pk=release_id).values_list("name", "version").first()
    return f"{row[0]}@{row[1]}" if row else str(release_id)


def http_client(agent: Agent, release: str | None) -> HttpAgent:
    """One client per agent configuration and release in this process, so its semaphore caps the
    requests of every lane (thread) of the process."""
    name = (agent.api_key_env or "").strip()
    secret = os.environ.get(name, "") if name else ""
    key = (agent.pk, agent.base_url, agent.auth_header, name, secret, agent.knowledge, agent.timeout, agent.retries,
           agent.max_concurrency, release)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = HttpAgent(
                url=agent.base_url, knowledge=agent.knowledge, release=release,
                headers=auth_headers(agent.auth_header, secret), timeout=agent.timeout, retries=agent.retries,
                concurrency=agent.max_concurrency, backoff=float(getattr(settings, "LLM_BACKOFF_BASE", 0.5)))
        return client


def answer(agent: Agent, data: dict[str, Any], *, key: str = "", release_id: int | None = None):
    """The next action of an HTTP or own-prompt agent on one test, as services.Answer."""
    from evaluation.services import LLM_STAGE, Answer, agent_api_key
    from evaluation.services.agents import read_chat_result

    if agent.mode == AgentMode.HTTP:
        reply = http_client(agent, release_label(release_id)).ask(data)
        return Answer(action=reply.action, raw=reply.raw, latency_ms=reply.latency_ms)
    from generation.llm import chat

    messages = [{"role": "system", "content": agent.system_prompt}] + openai_messages(data.get("context") or [])
    tools = tools_from_apis(data.get("apis") or [])
    result = chat(stage=LLM_STAGE, messages=messages, model=agent.model or settings.EVALUATION_MODEL,
                  temperature=agent.temperature, tools=tools or None, key=key, template=OWN_PROMPT_TEMPLATE,
                  template_version="1", base_url=agent.base_url or None, api_key=agent_api_key(agent),
                  use_cache=False)
    action, raw = read_chat_result(result, data, json_prompt=False)
    return Answer(action=action, raw=raw, latency_ms=result.latency_ms, call_id=result.call_id)

"""The HTTP agent protocol (docs/agent-protocol.md): the body we POST for one test, and how the
agent's answer is read back into an action.

Pure Python (no Django): the standalone runner (`python -m evaluation.runner`) and the Celery
lanes both use it. Answers are read by :func:`evaluation.reader.read_http`, the reader every
agent kind shares.

Request (one test)::

    {"protocol": "almita-agent/1",
     "messages": [OpenAI chat messages: user, assistant (content or tool_calls), tool],
     "tools": [OpenAI function schemas],
     "knowledge": {"format": "procedure" | "mermaid" | "code", "text": "..."} | null,
     "ids": {"release": "...", "conversation": 12, "test": 345}}

Response: an OpenAI assistant message (``{"role": "assistant", "content": ..., "tool_calls": [...]}``),
a whole chat completion (``{"choices": [{"message": ...}]}``), ``{"type": "reply", "content"}`` /
``{"type": "api_call", "name", "parameters"}``, or an untagged ``{"name", "arguments"}``; JSON of
these in a message's content is read too (evaluation/reader.py has every shape and rule).
"""
from __future__ import annotations

import json
from typing import Any

from evaluation.agents import knowledge_text, tools_from_apis
from evaluation.reader import offered_names

PROTOCOL = "almita-agent/1"
KNOWLEDGE_FORMATS = ("none", "procedure", "mermaid", "code")


def _call_from_text(text: str) -> tuple[str, dict[str, Any]] | None:
    """An `api` turn of a release context ("get_order(order_id=812)") as (name, parameters)."""
    from generation.pipeline.extract import ApiCallParseError, parse_api_call  # pure: no Django

    try:
        return parse_api_call(text)
    except (ApiCallParseError, ValueError, SyntaxError, RecursionError):
        return None


def openai_messages(context: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A release context (roles user, assistant, api, api_output) as OpenAI chat messages: an `api`
    turn becomes an assistant message with one tool call, its `api_output` the matching tool
    message. A call that cannot be read stays visible as assistant text."""
    out: list[dict[str, Any]] = []
    pending: str | None = None
    for i, m in enumerate(context or []):
        role = m.get("role")
        content = m.get("content", "")
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        if role == "api":
            parsed = _call_from_text(content)
            if parsed is None:
                out.append({"role": "assistant", "content": content})
                pending = None
                continue
            pending = f"call_{i}"
            out.append({"role": "assistant", "content": None, "tool_calls": [{
                "id": pending, "type": "function",
                "function": {"name": parsed[0], "arguments": json.dumps(parsed[1], ensure_ascii=False)}}]})
        elif role == "api_output":
            if pending is None:
                out.append({"role": "user", "content": f"(API output) {content}"})
            else:
                out.append({"role": "tool", "tool_call_id": pending, "content": content})
            pending = None
        elif role in ("user", "assistant"):
            out.append({"role": role, "content": content})
            pending = None
    return out


def request_body(data: dict[str, Any], *, knowledge: str = "procedure", release: str | None = None) -> dict[str, Any]:
    """The JSON body POSTed to an HTTP agent for one test (a frozen release row)."""
    know = None
    if knowledge != "none":
        used, text = knowledge_text(data, knowledge)
        know = {"format": used, "text": text}
    return {
        "protocol": PROTOCOL,
        "messages": openai_messages(data.get("context") or []),
        "tools": tools_from_apis(data.get("apis") or []),
        "knowledge": know,
        "ids": {"release": release, "conversation": data.get("conversation_id"), "test": data.get("test_id")},
    }


def tool_names(data: dict[str, Any]) -> list[str]:
    return offered_names(data)

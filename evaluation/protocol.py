"""The HTTP agent protocol (docs/agent-protocol.md): the body we POST for one test, and how the
agent's answer is read back into an action.

Pure Python (no Django): the standalone runner (`python -m evaluation.runner`) and the Celery
lanes both use it. The answer parsing itself is agents.py's (`action_from_object`,
`parse_function_answer`); this module only unwraps the protocol's envelopes around it.

Request (one test)::

    {"protocol": "almita-agent/1",
     "messages": [OpenAI chat messages: user, assistant (content or tool_calls), tool],
     "tools": [OpenAI function schemas],
     "knowledge": {"format": "procedure" | "mermaid" | "code", "text": "..."} | null,
     "ids": {"release": "...", "conversation": 12, "test": 345}}

Response: an OpenAI assistant message (``{"role": "assistant", "content": ..., "tool_calls": [...]}``),
a whole chat completion (``{"choices": [{"message": ...}]}``), or ``{"type": "reply", "content"}`` /
``{"type": "api_call", "name", "parameters"}``.
"""
from __future__ import annotations

import json
from typing import Any

from evaluation.agents import action_from_object, invalid, knowledge_text, parse_function_answer, tools_from_apis
from evaluation.metrics import API_CALL

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


def _tool_calls(message: dict[str, Any]) -> list[dict[str, Any]] | None:
    calls = message.get("tool_calls")
    if calls is None and isinstance(message.get("function_call"), dict):
        calls = [{"function": message["function_call"]}]
    if calls is None:
        return None
    if not isinstance(calls, list):
        return [{"name": None, "arguments": None}]
    out = []
    for c in calls:
        fn = c.get("function") if isinstance(c, dict) else None
        fn = fn if isinstance(fn, dict) else (c if isinstance(c, dict) else {})
        out.append({"name": fn.get("name"), "arguments": fn.get("arguments")})
    return out


def read_answer(obj: Any, tool_names: list[str] | None = None) -> dict[str, Any]:
    """An action from a decoded response body; a tool call to a tool we did not offer is invalid."""
    if not isinstance(obj, dict):
        return invalid(f"the response is JSON but not an object: {json.dumps(obj)[:120]}")
    if isinstance(obj.get("choices"), list) and obj["choices"]:
        first = obj["choices"][0]
        obj = first.get("message") if isinstance(first, dict) else None
        if not isinstance(obj, dict):
            return invalid("the chat completion has no message")
    elif isinstance(obj.get("message"), dict) and "type" not in obj:
        obj = obj["message"]
    if "type" in obj and "role" not in obj:
        action = action_from_object(obj)
    elif "role" in obj or "tool_calls" in obj or "content" in obj:
        content = obj.get("content")
        if content is not None and not isinstance(content, str):
            return invalid("the message content is not a string")
        action = parse_function_answer(content, _tool_calls(obj))
    else:
        return invalid("the response is neither an assistant message nor {\"type\": \"reply\"|\"api_call\"}: "
                       + json.dumps(obj, ensure_ascii=False)[:120])
    if action.get("type") == API_CALL and tool_names is not None and action["name"] not in tool_names:
        offered = ", ".join(tool_names) or "none"
        return invalid(f"a call to {action['name']}, which is not one of the tools offered ({offered})")
    return action


def read_response(status: int, body: bytes, tool_names: list[str] | None = None) -> dict[str, Any]:
    """An action from one HTTP response (status already known not to be retried)."""
    text = body.decode("utf-8", errors="replace")
    if not 200 <= status < 300:
        return invalid(f"HTTP {status}: {text.strip()[:200]}")
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return invalid(f"the response is not valid JSON: {text.strip()[:120]!r}")
    return read_answer(obj, tool_names)


def tool_names(data: dict[str, Any]) -> list[str]:
    return [str(a.get("name")) for a in data.get("apis") or [] if isinstance(a, dict)]

"""The answer reader: one function per transport, one canonical action for every agent kind.

Every agent under test (the A.8 JSON prompt, native function calling, an own-prompt model, an
HTTP agent speaking almita-agent/1, the standalone runner, simulated sessions) hands its raw
answer to this module and gets back one **canonical action**, a plain dict:

* ``{"type": "reply", "content": str}``;
* ``{"type": "api_call", "name": str, "parameters": {…}}`` — the name exactly as the agent wrote
  it, the parameters as decoded JSON (types kept: ``812`` and ``"812"`` stay different), plus an
  optional ``"note"`` (two calls at once, a name not offered);
* ``{"type": "invalid", "reason": str, "fault": "unreadable" | "outage"}`` — *unreadable*: an
  answer came back but is none of the shapes below; *outage*: no answer at all (connection
  failed, timeout, an HTTP error status, the circuit breaker is open).

Rules (docs/agent-protocol.md, "How an answer is read"; every shape has a named test):

1. **Names are never rewritten, and a name that is not offered is still a call.** A call to
   ``Get_Order_Details`` when ``get_order_details`` is offered, or to ``greet`` when no such API
   exists, is a call to a wrong API (API recall 1, correct API 0 under the exact comparison) — the
   paper's reading of "the agent calls the correct API". The reader adds a note saying so.
2. A type naming an offered API (compared case-insensitively) is a call to it, even when the
   word is also a reply synonym (``{"type": "send_message"}`` where ``send_message`` is offered);
   only the A.8 reply type ``"reply"`` itself always means a reply.
3. **JSON in content.** A message text that is, or contains, a JSON object of a recognised action
   shape (whole, fenced, or between the first ``{`` and the last ``}``) is that action, for every
   agent kind. Otherwise plain text is a reply for message-based agents (function calling, own
   prompt, HTTP) and unreadable for the A.8 JSON prompt, whose format is JSON.
4. Several tool calls at once: the first is scored and the answer carries a note.

Pure Python, no Django: the standalone runner imports it.
"""
from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from typing import Any

REPLY = "reply"
API_CALL = "api_call"
INVALID = "invalid"
UNREADABLE = "unreadable"
OUTAGE = "outage"

REPLY_TYPES = {"reply", "message", "respond", "response", "answer", "send_message", "reply_to_user", "say",
               "text"}
REPLY_TEXT_KEYS = ("content", "message", "text", "reply", "response", "answer")
CALL_TYPES = {"api_call", "api", "function_call", "function", "call", "action", "tool_call", "tool_use", "tool"}
NAME_KEYS = ("name", "api", "api_name", "function_name", "tool", "tool_name")
ARGUMENT_KEYS = ("parameters", "arguments", "params", "args", "input", "tool_input")
NESTS = ("function", "function_call", "api_call", "tool_call")
MAX_DEPTH = 4  # a message whose content is JSON of a message whose content is JSON …


# --------------------------------------------------------------------------- canonical actions


def reply(text: str) -> dict[str, Any]:
    return {"type": REPLY, "content": text.strip()}


def invalid(reason: str, fault: str = UNREADABLE) -> dict[str, Any]:
    return {"type": INVALID, "reason": reason, "fault": fault}


def outage(reason: str) -> dict[str, Any]:
    """No answer at all: connection failed, timeout, HTTP error status, LLM call failed."""
    return invalid(reason, OUTAGE)


def is_outage(action: dict[str, Any]) -> bool:
    return action.get("type") == INVALID and action.get("fault") == OUTAGE


def _jsonable(value: Any) -> Any:
    """A Python literal (single-quoted answers are read with ast) as JSON types."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_jsonable(v) for v in value), key=repr)
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return str(value)


def _offered_match(name: str, offered: Iterable[str]) -> str | None:
    """The offered API whose name equals `name` ignoring case, if any."""
    low = name.lower()
    return next((o for o in offered if o.lower() == low), None)


def call(name: Any, params: Any, offered: Iterable[str] = (), *, kind: str = "call") -> dict[str, Any]:
    if not isinstance(name, str) or not name.strip():
        return invalid(f"a {kind} that names no API")
    name = name.strip()
    params = {} if params is None else params
    if not isinstance(params, dict):
        return invalid(f"the parameters of {name} are not an object")
    action: dict[str, Any] = {"type": API_CALL, "name": name, "parameters": _jsonable(params)}
    offered = [str(o) for o in offered or ()]
    if offered and name not in offered:
        same = _offered_match(name, offered)
        action["note"] = (f"{name} differs from the offered {same} only in case: a call to a wrong API"
                          if same else f"{name} is not one of the APIs offered: a call to a wrong API")
    return action


# --------------------------------------------------------------------------- text


_FENCE = re.compile(r"```[A-Za-z]*\s*(.*?)```", re.S)


def load_object(text: str) -> Any:
    """JSON first; then a Python literal (the paper's own schema is written with single quotes)."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def json_objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects a text is or contains: fenced blocks, the whole text, the span from the
    first "{" to the last "}" — in that order, each once."""
    candidates = [m.group(1).strip() for m in _FENCE.finditer(text)] + [text.strip()]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    found, seen = [], set()
    for c in candidates:
        if c in seen or not c.startswith(("{", "[")):
            continue
        seen.add(c)
        obj = load_object(c)
        if isinstance(obj, dict):
            found.append(obj)
    return found


def read_text(text: Any, offered: Iterable[str] = (), *, text_is_reply: bool, depth: int = 0) -> dict[str, Any]:
    """A text answer. `text_is_reply`: plain text is a reply (message-based agents) or
    unreadable (the A.8 JSON prompt). A JSON action in the text is that action either way."""
    if text is None or not isinstance(text, str) or not text.strip():
        return invalid("the agent returned an empty answer" if text_is_reply is False
                       else "the agent returned neither text nor a tool call")
    offered = list(offered or ())
    objects = json_objects(text) if depth < MAX_DEPTH else []
    for obj in objects:
        action = read_object(obj, offered, depth=depth + 1)
        if action["type"] != INVALID:
            return action
    if text_is_reply:
        return reply(text)
    if objects:
        return read_object(objects[0], offered, depth=depth + 1)
    return invalid("the answer is not a JSON object: " + text.strip()[:120])


# --------------------------------------------------------------------------- objects


def _arguments(obj: dict[str, Any]) -> tuple[bool, Any]:
    """(found, value) of the first argument container (a JSON string is decoded)."""
    for key in ARGUMENT_KEYS:
        if key in obj:
            value = obj[key]
            if isinstance(value, str):
                if not value.strip():
                    return True, {}
                loaded = load_object(value)
                return True, loaded if isinstance(loaded, dict) else value
            return True, value
    return False, None


def _name_key(obj: dict[str, Any]) -> str | None:
    return next((obj[k] for k in NAME_KEYS if isinstance(obj.get(k), str) and obj[k].strip()), None)


def _reply_text(obj: dict[str, Any], params: Any) -> str | None:
    if isinstance(params, str):
        return params
    if isinstance(params, dict):
        text = next((params[k] for k in REPLY_TEXT_KEYS if isinstance(params.get(k), str)), None)
        if text is None and len(params) == 1 and isinstance(next(iter(params.values())), str):
            text = next(iter(params.values()))
        if text is not None:
            return text
    return next((obj[k] for k in REPLY_TEXT_KEYS if isinstance(obj.get(k), str)), None)


def _call_name(c: Any) -> str:
    fn = c.get("function") if isinstance(c, dict) and isinstance(c.get("function"), dict) else c
    return str(fn.get("name") or "?") if isinstance(fn, dict) else "?"


def read_tool_calls(calls: Any, offered: Iterable[str] = ()) -> dict[str, Any]:
    """OpenAI tool calls (``[{"function": {"name", "arguments"}}]`` or flattened
    ``[{"name", "arguments"}]``): the first is scored; arguments are an object or its JSON text."""
    if not isinstance(calls, list) or not calls:
        return invalid("tool_calls is not a non-empty list")
    first = calls[0] if isinstance(calls[0], dict) else {}
    fn = first.get("function") if isinstance(first.get("function"), dict) else first
    name, raw = fn.get("name"), fn.get("arguments", fn.get("parameters"))
    if not isinstance(name, str) or not name.strip():
        return invalid("a tool call without a name")
    if isinstance(raw, str) and raw.strip():
        try:
            raw = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            return invalid(f"the arguments of the call to {name.strip()} are not valid JSON: {raw[:120]}")
    elif isinstance(raw, str):
        raw = {}
    action = call(name, raw, offered, kind="tool call")
    if action["type"] == API_CALL and len(calls) > 1:
        others = ", ".join(_call_name(c) for c in calls[1:])
        note = f"the agent made {len(calls)} calls at once; the first is scored ({others} not scored)"
        action["note"] = note + ("; " + action["note"] if action.get("note") else "")
    return action


def read_message(message: dict[str, Any], offered: Iterable[str] = (), *, depth: int = 0) -> dict[str, Any]:
    """An OpenAI assistant message: a tool call is an API call; text is read by :func:`read_text`
    (JSON in content is an action, other text a reply)."""
    calls = message.get("tool_calls")
    if calls:
        return read_tool_calls(calls, offered)
    legacy = message.get("function_call")
    if isinstance(legacy, dict) and legacy:
        return read_tool_calls([{"function": legacy}], offered)
    content = message.get("content")
    if isinstance(content, list):  # content parts: [{"type": "text", "text": …}]
        texts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        if len(texts) != len(content):
            return invalid("the message content holds parts that are not text")
        content = "".join(texts)
    if content is not None and not isinstance(content, str):
        return invalid("the message content is not text")
    return read_text(content, offered, text_is_reply=True, depth=depth)


def _is_message(obj: dict[str, Any]) -> bool:
    return "role" in obj or "tool_calls" in obj or ("content" in obj and "type" not in obj and "action" not in obj
                                                   and _name_key(obj) is None)


def read_object(obj: Any, offered: Iterable[str] = (), *, depth: int = 0) -> dict[str, Any]:
    """Any decoded JSON answer: a chat completion, an assistant message, or an action object
    (the A.8 format and the common call and reply shapes; docs/agent-protocol.md)."""
    if not isinstance(obj, dict):
        return invalid(f"the answer is JSON but not an object: {json.dumps(obj, default=str)[:120]}")
    offered = [str(o) for o in offered or ()]
    if isinstance(obj.get("choices"), list):
        first = obj["choices"][0] if obj["choices"] else None
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(message, dict):
            return invalid("the chat completion has no message")
        return read_message(message, offered, depth=depth)
    if isinstance(obj.get("message"), dict) and "type" not in obj:
        return read_message(obj["message"], offered, depth=depth)
    if _is_message(obj):
        return read_message(obj, offered, depth=depth)
    for nest in NESTS:
        inner = obj.get(nest)
        if isinstance(inner, dict) and isinstance(inner.get("name"), str):
            return call(inner["name"], _arguments(inner)[1], offered, kind=nest)
    kind = obj.get("type", obj.get("action"))
    if not isinstance(kind, str) and isinstance(obj.get("function"), str):
        kind = obj["function"]
    has_args, params = _arguments(obj)
    if not isinstance(kind, str) or not kind.strip():
        name = _name_key(obj)
        # An untagged call needs its arguments, or the name of an offered API ({"name": "Bob"}
        # inside a reply is not a call).
        if name is not None and (has_args or _offered_match(name.strip(), offered)):
            return call(name, params, offered, kind="untagged call")
        text = _reply_text(obj, None)
        if text is not None and text.strip():
            return reply(text)
        return invalid("the JSON object has no 'type'")
    kind = kind.strip()
    if kind == REPLY or (kind.lower() in REPLY_TYPES and not _offered_match(kind, offered)):
        text = _reply_text(obj, params)
        if text is None or not text.strip():
            return invalid("a reply without any text")
        return reply(text)
    if kind.lower() in CALL_TYPES and not _offered_match(kind, offered):
        name = _name_key(obj)
        if name is None and isinstance(params, dict) and isinstance(params.get("name"), str):
            # {"type": "api_call", "parameters": {"name": …, "parameters": {…}}}
            return call(params["name"], _arguments(params)[1], offered, kind=kind)
        return call(name, params, offered, kind=kind)
    return call(kind, params, offered, kind=kind)  # the A.8 format: the type is the API's name


def read_http(status: int, body: bytes, offered: Iterable[str] = ()) -> dict[str, Any]:
    """One HTTP response of an almita-agent/1 agent (a retried status is already exhausted). An
    error status is an outage; a body that is not JSON, or JSON of no known shape, is unreadable."""
    text = body.decode("utf-8", errors="replace")
    if not 200 <= status < 300:
        return outage(f"HTTP {status}: {text.strip()[:200]}")
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return invalid(f"the response is not valid JSON: {text.strip()[:120]!r}")
    action = read_object(obj, offered)
    if action["type"] == INVALID and isinstance(obj, dict) and not _is_message(obj) and "type" not in obj:
        action["reason"] += (" (expected an assistant message, a chat completion, {\"type\": \"reply\"} or "
                             "{\"type\": \"api_call\"})")
    return action


def offered_names(data: dict[str, Any]) -> list[str]:
    """The names of the APIs a test offers."""
    return [str(a.get("name")) for a in data.get("apis") or [] if isinstance(a, dict) and a.get("name")]


# --------------------------------------------------------------------------- per agent kind


def read_json_prompt(content: str | None, offered: Iterable[str] = ()) -> dict[str, Any]:
    """The A.8 JSON prompt's answer: a JSON action (plain text is unreadable)."""
    return read_text(content, offered, text_is_reply=False)


def read_chat(content: str | None, tool_calls: list[dict[str, Any]] | None,
              offered: Iterable[str] = ()) -> dict[str, Any]:
    """A chat model's answer (function calling, own prompt): its text and tool calls."""
    return read_message({"content": content, "tool_calls": tool_calls or None}, offered)

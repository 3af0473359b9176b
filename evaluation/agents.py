"""How an agent under test sees a test, and how its answer is read back.

* :func:`build_messages` writes the agent prompt in the spirit of the paper's A.8 (our own wording):
  the knowledge (procedure text, or the workflow as a Mermaid flowchart or pseudo-code), the
  available actions, the rules, the answer format; the conversation so far is the user turn.
* :func:`tools_from_apis` turns the release's API list into OpenAI function-calling tools (the
  paper's "w/ F" row).
* :func:`parse_json_answer` / :func:`parse_function_answer` read a reply back into an action:
  ``{"type": "reply", "content"}``, ``{"type": "api_call", "name", "parameters"}``, or
  ``{"type": "invalid", "reason"}`` — an unreadable answer is counted wrong, with the reason.
* :func:`reference_action` gives the built-in reference agents' answers.

Everything here is pure (no Django), so tests call it directly.
"""
from __future__ import annotations

import ast
import json
import re
from typing import Any

from evaluation.metrics import API_CALL, INVALID, REPLY

PROMPT_TEMPLATE = "evaluation_agent"
PROMPT_VERSION = "1"
REPLY_TYPES = {"reply", "message", "respond", "response", "answer", "send_message", "reply_to_user", "say"}
REPLY_TEXT_KEYS = ("content", "message", "text", "reply", "response", "answer")
ALWAYS_REPLY_TEXT = "Could you please give me more details about your request?"

SYSTEM_HEAD = """You are a customer support agent. Your job is to handle the customer's request by \
following the procedure below, and nothing else.

You receive the conversation so far: the messages exchanged with the customer, and the actions you \
already executed together with their outputs.

{knowledge_intro}
{knowledge}

Only the procedure above is your knowledge. Never invent data, policies or steps that it does not \
contain.

These are the actions you can execute:
<actions>
{actions}
</actions>

Your next step is either a message to the customer or exactly one action. An action needs all of \
its required parameters: when the conversation does not give you a value, ask the customer for it \
instead of calling the action. Follow the procedure's directives before acting; when the procedure \
asks for the customer's confirmation before a consequential action, ask for it first. Check that the \
customer's data agrees with the outputs of earlier actions in the conversation."""

JSON_FORMAT = """

Answer with one JSON object and nothing else:
{"type": "<name of the action to call>", "parameters": {<parameter name>: <value>, ...}}
To write to the customer instead, use the type "reply":
{"type": "reply", "parameters": {"content": "<your message to the customer>"}}"""

FUNCTIONS_FORMAT = """

To execute an action, call the matching function with its parameters. To write to the customer, \
answer with the message text only."""

KNOWLEDGE_INTRO = {
    "procedure": "This is the procedure you follow:",
    "mermaid": "This is the procedure you follow, as a Mermaid flowchart:",
    "code": "This is the procedure you follow, as pseudo-code:",
}
KNOWLEDGE_TAGS = {"procedure": "procedure", "mermaid": "flowchart", "code": "code"}


# --------------------------------------------------------------------------- prompt


def knowledge_text(data: dict[str, Any], knowledge: str) -> tuple[str, str]:
    """(format actually used, text). Graph formats fall back to the procedure text when the
    release entry carries no flowgraph."""
    if knowledge in ("mermaid", "code"):
        ready = (data.get("knowledge") or {}).get(knowledge)
        if isinstance(ready, str) and ready.strip():
            return knowledge, ready
        # The graph of the test's flowgraph, as graph_to_json gives it (release rows name only
        # flowgraph_id; the evaluation service fills this key in from the Flowgraph row).
        graph = data.get("flowgraph")
        if isinstance(graph, dict) and graph.get("nodes"):
            from generation.pipeline.formats import graph_from_json
            from generation.pipeline.render import to_code, to_mermaid

            g = graph_from_json(graph)
            return knowledge, (to_mermaid(g) if knowledge == "mermaid" else to_code(g))
    return "procedure", procedure_text(data.get("procedure"))


def procedure_text(procedure: Any) -> str:
    """Release rows carry the procedure as {"id", "title", "text"}; hand-made ones as a string."""
    if isinstance(procedure, dict):
        title, text = str(procedure.get("title") or "").strip(), str(procedure.get("text") or "").strip()
        return f"{title}\n\n{text}" if title and text and not text.startswith(title) else (text or title)
    return str(procedure or "")


def actions_text(apis: list[dict[str, Any]]) -> str:
    return json.dumps(apis or [], indent=1, ensure_ascii=False)


def format_context(context: list[dict[str, Any]]) -> str:
    lines = []
    for m in context or []:
        content = m.get("content", "")
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        lines.append(f"{m.get('role', '?')}: {content}")
    return "\n".join(lines)


def build_messages(data: dict[str, Any], *, knowledge: str = "procedure", functions: bool = False) -> list[dict[str, str]]:
    used, text = knowledge_text(data, knowledge)
    tag = KNOWLEDGE_TAGS[used]
    system = SYSTEM_HEAD.format(
        knowledge_intro=KNOWLEDGE_INTRO[used],
        knowledge=f"<{tag}>\n{text.strip()}\n</{tag}>",
        actions=actions_text(data.get("apis") or []),
    ) + (FUNCTIONS_FORMAT if functions else JSON_FORMAT)
    user = f"<conversation>\n{format_context(data.get('context') or [])}\n</conversation>"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


# --------------------------------------------------------------------------- tools

_SIMPLE = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "dict": "object",
           "list": "array", "any": None, "none": "null", "string": "string", "integer": "integer",
           "number": "number", "boolean": "boolean", "object": "object", "array": "array"}


def json_schema_for(type_expr: str) -> dict[str, Any]:
    """A JSON-schema fragment for a Python typing expression (list[str], Optional[int], ...)."""
    t = (type_expr or "").strip()
    m = re.fullmatch(r"(?i)optional\[(.*)\]", t)
    if m:
        return json_schema_for(m.group(1))
    if "|" in t:
        parts = [p.strip() for p in t.split("|") if p.strip().lower() not in ("none", "null")]
        return json_schema_for(parts[0]) if len(parts) == 1 else {}
    m = re.fullmatch(r"(?i)(list|set|tuple|sequence)\[(.*)\]", t)
    if m:
        items = json_schema_for(m.group(2).split(",")[0])
        return {"type": "array", **({"items": items} if items else {})}
    if re.fullmatch(r"(?i)dict\[.*\]", t):
        return {"type": "object"}
    kind = _SIMPLE.get(t.lower(), "string" if t else None)
    return {"type": kind} if kind else {}


def tools_from_apis(apis: list[dict[str, Any]]) -> list[dict[str, Any]]:
    tools = []
    for api in apis or []:
        props: dict[str, Any] = {}
        required: list[str] = []
        for p in api.get("params") or []:
            if not isinstance(p, dict):
                continue
            if "name" in p:
                name, ptype = str(p["name"]), str(p.get("type") or "str")
                is_required = bool(p.get("required", True))
                desc = str(p.get("description") or p.get("desc") or "")
            elif len(p) == 1:  # the paper's {"order_id": "int"} shorthand
                name, ptype = next(iter(p.items()))
                name, ptype, is_required, desc = str(name), str(ptype), True, ""
            else:
                continue
            schema = json_schema_for(ptype)
            if desc:
                schema["description"] = desc
            props[name] = schema
            if is_required:
                required.append(name)
        output = api.get("output") or {}
        desc = str(api.get("desc") or api.get("description") or "")
        if isinstance(output, dict) and output.get("name"):
            desc = f"{desc} Returns {output['name']} ({output.get('type', 'any')}).".strip()
        tools.append({"type": "function", "function": {
            "name": str(api.get("name")), "description": desc,
            "parameters": {"type": "object", "properties": props, "required": required},
        }})
    return tools


# --------------------------------------------------------------------------- parsing


def invalid(reason: str) -> dict[str, Any]:
    return {"type": INVALID, "reason": reason}


_FENCE = re.compile(r"```(?:json|JSON|python)?\s*(.*?)```", re.S)


def _load_object(text: str) -> Any:
    """JSON first; then a Python literal (the paper's own schema is written with single quotes)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def _first_object(text: str) -> Any:
    candidates = [m.group(1).strip() for m in _FENCE.finditer(text)] + [text.strip()]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    for c in candidates:
        obj = _load_object(c)
        if isinstance(obj, dict):
            return obj
    return None


CALL_TYPES = {"api_call", "api", "function_call", "function", "call", "action", "tool_call", "tool_use", "tool"}
NAME_KEYS = ("name", "api", "api_name", "function_name", "tool", "tool_name")
ARGUMENT_KEYS = ("parameters", "arguments", "params", "args", "input", "tool_input")


def _arguments(obj: dict[str, Any]) -> Any:
    """The first argument container an object carries (a JSON string is read as JSON)."""
    for key in ARGUMENT_KEYS:
        if key in obj:
            value = obj[key]
            if isinstance(value, str):
                loaded = _load_object(value) if value.strip() else {}
                return loaded if isinstance(loaded, dict) else value
            return {} if value is None else value
    return None


def _call(name: Any, params: Any, kind: str) -> dict[str, Any]:
    if not isinstance(name, str) or not name.strip():
        return invalid(f"type {kind!r} names no API")
    params = {} if params is None else params
    if not isinstance(params, dict):
        return invalid(f"the parameters of {name.strip()} are not an object")
    return {"type": API_CALL, "name": name.strip(), "parameters": params}


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


def action_from_object(obj: dict[str, Any], api_names: Any = ()) -> dict[str, Any]:
    """Read one answer object. Shapes understood (each checked by a test):

    * the A.8 format: ``{"type": "<API>", "parameters": {...}}`` and ``{"type": "reply", "parameters": {"content"}}``;
    * a tagged call: ``{"type": "api_call" | "function_call" | "tool_use" | ..., "name": <API>,
      "parameters" | "arguments" | "input": {...}}`` (arguments may be a JSON string), or the call
      nested under ``"function"`` / ``"api_call"`` / ``"tool_call"``; ``{"tool_calls": [...]}`` (first call);
    * an untagged call: ``{"name": <API>, "arguments": {...}}``;
    * a reply: ``{"type": "reply" | "message" | ..., "content" | "text" | ...: "..."}``, ``{"content": "..."}``.

    `api_names` are the APIs the test offers: a type that names one of them is a call to it, even
    when it is also a reply synonym (an API called ``send_message``, ``answer`` or ``say``); only
    the A.8 reply type ``"reply"`` itself always means a reply.
    """
    names = {str(n) for n in api_names or ()}
    calls = obj.get("tool_calls")
    if isinstance(calls, list) and calls and isinstance(calls[0], dict):
        first = calls[0].get("function") if isinstance(calls[0].get("function"), dict) else calls[0]
        action = _call(first.get("name"), _arguments(first), "tool_calls")
        if action["type"] == API_CALL and len(calls) > 1:
            action["note"] = f"the agent made {len(calls)} calls at once; the first one is scored"
        return action
    kind = obj.get("type", obj.get("action"))
    for nest in ("function", "function_call", "api_call", "tool_call"):
        inner = obj.get(nest)
        if isinstance(inner, dict) and isinstance(inner.get("name"), str):
            return _call(inner.get("name"), _arguments(inner), nest)
    if not isinstance(kind, str) and isinstance(obj.get("function"), str):
        kind = obj["function"]
    params = _arguments(obj)
    if not isinstance(kind, str) or not kind.strip():
        name = next((obj[k] for k in NAME_KEYS if isinstance(obj.get(k), str) and obj[k].strip()), None)
        if name is not None:
            return _call(name, params, "untagged")
        text = _reply_text(obj, None)
        if text is not None and text.strip():
            return {"type": REPLY, "content": text.strip()}
        return invalid("the JSON object has no 'type'")
    kind = kind.strip()
    if kind in names and kind != REPLY:
        return _call(kind, params, kind)
    if kind.lower() in CALL_TYPES:
        name = next((obj[k] for k in NAME_KEYS if isinstance(obj.get(k), str) and obj[k].strip()), None)
        if name is None and isinstance(params, dict) and isinstance(params.get("name"), str):
            # {"type": "api_call", "parameters": {"name": ..., "parameters": {...}}}
            return _call(params["name"], _arguments(params), kind)
        return _call(name, params, kind)
    if kind.lower() in REPLY_TYPES:
        text = _reply_text(obj, params)
        if text is None or not text.strip():
            return invalid("a reply without any text")
        return {"type": REPLY, "content": text.strip()}
    return _call(kind, params, kind)


def parse_json_answer(content: str | None, api_names: Any = ()) -> dict[str, Any]:
    """Read an answer in the A.8 JSON format (or another common shape: :func:`action_from_object`).
    `api_names`: the APIs the test offers, so that none is mistaken for a reply synonym."""
    if content is None or not content.strip():
        return invalid("the agent returned an empty answer")
    obj = _first_object(content)
    if obj is None:
        return invalid("the answer is not a JSON object: " + content.strip()[:120])
    return action_from_object(obj, api_names)


def parse_function_answer(content: str | None, tool_calls: list[dict[str, Any]] | None) -> dict[str, Any]:
    """Read a function-calling answer: a tool call is an API call, plain text is a reply."""
    calls = tool_calls or []
    if calls:
        call = calls[0]
        name = call.get("name")
        raw = call.get("arguments")
        if isinstance(raw, dict):
            args = raw
        elif raw is None or (isinstance(raw, str) and not raw.strip()):
            args = {}
        else:
            try:
                args = json.loads(raw)
            except (json.JSONDecodeError, TypeError):
                return invalid(f"the arguments of the call to {name} are not valid JSON: {str(raw)[:120]}")
        if not isinstance(name, str) or not name.strip():
            return invalid("a function call without a name")
        if not isinstance(args, dict):
            return invalid(f"the arguments of the call to {name} are not an object")
        action = {"type": API_CALL, "name": name.strip(), "parameters": args}
        if len(calls) > 1:
            action["note"] = f"the agent made {len(calls)} calls at once; the first one is scored"
        return action
    if content is None or not content.strip():
        return invalid("the agent returned neither text nor a function call")
    return {"type": REPLY, "content": content.strip()}


# --------------------------------------------------------------------------- reference agents


def reference_action(mode: str, data: dict[str, Any]) -> dict[str, Any]:
    """The built-in agents that validate the metric code."""
    expected = data.get("expected") or {}
    if mode == "gold":
        if expected.get("type") == API_CALL:
            return {"type": API_CALL, "name": expected.get("name", ""),
                    "parameters": dict(expected.get("parameters") or {})}
        return {"type": REPLY, "content": str(expected.get("content", ""))}
    if mode == "always_reply":
        return {"type": REPLY, "content": ALWAYS_REPLY_TEXT}
    if mode == "first_api":
        apis = data.get("apis") or []
        if not apis:
            return invalid("the test lists no API to call")
        return {"type": API_CALL, "name": str(apis[0].get("name", "")), "parameters": {}}
    raise ValueError(f"{mode!r} is not a reference agent")

"""How an agent under test sees a test, and how its answer is read back.

* :func:`build_messages` writes the agent prompt in the spirit of the paper's A.8 (our own wording):
  the knowledge (procedure text, or the workflow as a Mermaid flowchart or pseudo-code), the
  available actions, the rules, the answer format; the conversation so far is the user turn.
* :func:`tools_from_apis` turns the release's API list into OpenAI function-calling tools (the
  paper's "w/ F" row).
* answers are read back by :mod:`evaluation.reader`, the one reader of every agent kind;
* :func:`reference_action` gives the built-in reference agents' answers.

Everything here is pure (no Django), so tests call it directly.
"""
from __future__ import annotations

import json
import re
from typing import Any

from evaluation.reader import API_CALL, REPLY, invalid

PROMPT_TEMPLATE = "evaluation_agent"
PROMPT_VERSION = "1"
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

"""The JSON Schemas of the stages whose reply is JSON, sent as structured outputs where the
endpoint takes them (llm/capabilities.py). Strict mode: every property required, no others.

They describe what the prompts already ask for (A.1 intents, A.3 APIs, A.6/A.7 conversations);
the stages' own parsers and validators still run on every reply, schema or not.
"""
from __future__ import annotations

from typing import Any


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


_TEXT = {"type": "string"}

INTENTS = _object({"intents": {"type": "array", "items": _object({"client": _TEXT, "issue": _TEXT, "name": _TEXT})}})

_NAMED_TYPE = _object({"name": _TEXT, "type": _TEXT})
APIS = _object({"apis": {"type": "array", "items": _object({
    "name": _TEXT, "desc": _TEXT, "params": {"type": "array", "items": _NAMED_TYPE}, "output": _NAMED_TYPE})}})

CONVERSATION = _object({"messages": {"type": "array", "items": _object({
    "role": {"type": "string", "enum": ["user", "assistant", "api", "api_output"]}, "content": _TEXT})}})

# Prompt template → (schema name, schema).
SCHEMAS: dict[str, tuple[str, dict[str, Any]]] = {
    "A.1": ("intents", INTENTS),
    "A.3": ("apis", APIS),
    "A.6": ("conversation", CONVERSATION),
    "A.7": ("conversation", CONVERSATION),
}


def schema_for(template_id: str) -> dict[str, Any] | None:
    """{"name", "schema"} for a template whose reply is JSON, else None."""
    found = SCHEMAS.get(template_id)
    return {"name": found[0], "schema": found[1]} if found else None

"""A small JSON Schema check for the fake server's structured outputs (the subset strict mode uses:
object/array/string/number/integer/boolean types, properties, required, additionalProperties,
items, enum). Written for the tests; the app itself never validates against schemas this way."""
from __future__ import annotations

import json
from typing import Any

_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "integer": int, "number": (int, float)}


def conforms(value: Any, schema: dict) -> bool:
    kind = schema.get("type")
    if kind:
        if kind in ("integer", "number") and isinstance(value, bool):
            return False
        if not isinstance(value, _TYPES[kind]):
            return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    if isinstance(value, dict):
        props = schema.get("properties", {})
        if any(name not in value for name in schema.get("required", [])):
            return False
        if schema.get("additionalProperties") is False and any(k not in props for k in value):
            return False
        return all(conforms(v, props[k]) for k, v in value.items() if k in props)
    if isinstance(value, list) and "items" in schema:
        return all(conforms(v, schema["items"]) for v in value)
    return True


def text_conforms(text: str | None, schema: dict) -> bool:
    try:
        return conforms(json.loads(text or ""), schema)
    except json.JSONDecodeError:
        return False


def requested_schema(body: dict) -> dict | None:
    fmt = body.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("schema") if fmt.get("type") == "json_schema" else None

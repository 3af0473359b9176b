"""Declared API outputs for the API graph (ToolDial §3.1). Pure: no Django.

An API-graph edge may only come from a field the API's output declares: its JSON Schema (an MCP
tool's ``outputSchema``, an ``output_schema`` member, or a file of output schemas imported next to
the tools — tau-bench's tools.json declares none), STAR's output list, or the paper's
``{"output": {"name", "type"}}``. No name is ever made up from the API's name.

:func:`schema_fields` flattens a JSON Schema into the values a caller can take from the output:

* an object's properties, at any depth (``address.zip``);
* **list → item**: the items of an array (``flights[].flight_number``; a list of scalars yields its
  items under the list's ``title``, e.g. ``orders[]`` titled ``order_id``);
* maps: an object with ``additionalProperties`` is a collection like a list (``variants{}.price``),
  and its keys are a field when ``propertyNames`` has a ``title`` (``{iata_code}``);
* an ``id`` inside a collection named after an entity is that entity's id
  (``payment_methods{}.id`` is also ``payment_method_id``);
* a bare scalar output is a field only when the schema gives it a ``title``.

A record's **state** is its top-level ``status`` property's ``const`` or ``enum`` (undeclared: any
state). An API's ``accepts`` says which states an input accepts: ``{"order_id": {"status":
["pending"]}}`` or ``{"reservation_id": {"status_not": ["cancelled"]}}``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class SchemaField:
    name: str
    type: str
    description: str
    path: str
    via: str  # "field", "list item" or "map key"


def _type(schema: dict[str, Any]) -> str:
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "")
    if not t:
        if "properties" in schema or "additionalProperties" in schema:
            return "object"
        if "items" in schema:
            return "array"
    return str(t or "")


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and not name.endswith("ss") and len(name) > 3 else name


def schema_fields(schema: Any, *, name: str = "", path: str = "", via: str = "field",
                  parent: str = "", depth: int = 0) -> list[SchemaField]:
    """Every value of an output described by `schema` (see the module docstring)."""
    if not isinstance(schema, dict) or depth > 8:
        return []
    kind = _type(schema)
    desc = str(schema.get("description") or "")
    title = str(schema.get("title") or "")
    out: list[SchemaField] = []
    if kind == "array":
        items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
        if name:
            out.append(SchemaField(name, "array", desc, path, via))
        label = str(items.get("title") or "") or name
        out += schema_fields({**items, "title": label} if label and _type(items) not in ("object", "array") else items,
                             name=label, path=f"{path}[]", via="list item", parent=name, depth=depth + 1)
        return out
    if kind == "object":
        if name:
            out.append(SchemaField(name, "object", desc, path, via))
        for key, sub in (schema.get("properties") or {}).items():
            sub_path = f"{path}.{key}" if path else str(key)
            out += schema_fields(sub, name=str(key), path=sub_path, via=via, parent=name, depth=depth + 1)
            if str(key) == "id" and parent_entity(name):
                sub = sub if isinstance(sub, dict) else {}
                out.append(SchemaField(f"{parent_entity(name)}_id", _type(sub), str(sub.get("description") or ""),
                                       sub_path, via))
        keys = schema.get("propertyNames")
        if isinstance(keys, dict) and keys.get("title"):
            out.append(SchemaField(str(keys["title"]), "string", str(keys.get("description") or ""),
                                   f"{path}{{{keys['title']}}}", "map key"))
        values = schema.get("additionalProperties")
        if isinstance(values, dict):
            label = str(values.get("title") or "") or name
            out += schema_fields(values, name=label, path=f"{path}{{}}", via="list item", parent=name,
                                 depth=depth + 1)
        return out
    label = title or name
    if label:
        out.append(SchemaField(label, kind, desc, path or label, via))
    return out


def parent_entity(collection: str) -> str:
    """`payment_methods` -> `payment_method` (the entity an `id` inside it identifies)."""
    return _singular(collection) if collection else ""


def record_states(schema: Any) -> set[str] | None:
    """The states a returned record can be in: its top-level `status` const or enum (None: any)."""
    if not isinstance(schema, dict):
        return None
    status = (schema.get("properties") or {}).get("status")
    if not isinstance(status, dict):
        return None
    if "const" in status:
        return {str(status["const"])}
    if isinstance(status.get("enum"), list):
        return {str(v) for v in status["enum"]}
    return None


def accepted(states: set[str] | None, rule: dict[str, Any]) -> bool:
    """Whether a record in one of `states` can be passed to an input with this `accepts` rule."""
    if states is None or not isinstance(rule, dict):
        return True
    allowed, excluded = rule.get("status"), rule.get("status_not")
    possible = set(states)
    if isinstance(allowed, list):
        possible &= {str(s) for s in allowed}
    if isinstance(excluded, list):
        possible -= {str(s) for s in excluded}
    return bool(possible)


def declared_schema(item: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON Schema of an API's output when it declares one (MCP's outputSchema, an
    output_schema member, or a `returns` that is a schema rather than a type name)."""
    for key in ("outputSchema", "output_schema", "returns"):
        schema = item.get(key)
        if isinstance(schema, dict) and any(k in schema for k in ("properties", "items", "additionalProperties",
                                                                   "title", "propertyNames")):
            return schema
    return None


def input_fields(params: dict[str, Any]) -> list[SchemaField]:
    """A JSON-schema parameter list: each parameter, and the fields of a list of records
    (``flights[].flight_number``); a list of scalars takes its items' type."""
    inputs = []
    for pname, schema in (params.get("properties") or {}).items():
        schema = schema if isinstance(schema, dict) else {}
        ptype, desc = str(schema.get("type", "")), str(schema.get("description", ""))
        items = schema.get("items") if isinstance(schema.get("items"), dict) else None
        if ptype == "array" and items is not None and items.get("type") not in ("object", "array", None):
            ptype = str(items["type"])
        inputs.append(SchemaField(str(pname), ptype, desc, str(pname), "field"))
        if items is not None and isinstance(items.get("properties"), dict):
            for sub, sub_schema in items["properties"].items():
                sub_schema = sub_schema if isinstance(sub_schema, dict) else {}
                inputs.append(SchemaField(str(sub), str(sub_schema.get("type", "")),
                                          str(sub_schema.get("description", "")), f"{pname}[].{sub}", "list item"))
    return inputs

"""JSON Schema and FlowBench parameter descriptions -> :class:`ParamSpec` with the paper's types.

The paper writes types as Python typing names (``str``, ``int``, ``float``, ``bool``, ``list[...]``,
``dict[...]``, ``Optional[...]``). JSON Schema fragments (OpenAPI, MCP, OpenAI tools) and
FlowBench's ``{type, description, required, properties}`` parameters are mapped onto them, keeping
what a reader or an offline value generator needs: the description, enumerations (declared, or
written in the description as ``Enumeration type, [Yes, No]``), defaults, examples written in the
description (``such as "CA1234, CZ5678"``) and the nested properties of objects.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ParamSpec:
    name: str
    type: str = "str"
    required: bool = True
    description: str = ""
    enum: list[Any] = field(default_factory=list)
    default: Any = None
    properties: list["ParamSpec"] = field(default_factory=list)
    format: str = ""
    # A oneOf/anyOf: each member's name, type and field names (its fields are in ``properties``).
    variants: list[dict[str, Any]] = field(default_factory=list)
    # What else a schema says about good values: declared examples, a regular expression, a range.
    examples: list[Any] = field(default_factory=list)
    pattern: str = ""
    minimum: float | None = None
    maximum: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The paper's parameter dict; the optional keys appear only when they hold something."""
        d: dict[str, Any] = {"name": self.name, "type": self.type, "required": self.required,
                             "description": self.description}
        if self.enum:
            d["enum"] = list(self.enum)
        if self.default is not None:
            d["default"] = self.default
        if self.format:
            d["format"] = self.format
        if self.properties:
            d["properties"] = [p.to_dict() for p in self.properties]
        if self.variants:
            d["variants"] = [dict(v) for v in self.variants]
        for key in ("examples", "pattern", "minimum", "maximum"):
            if getattr(self, key) not in (None, "", []):
                d[key] = getattr(self, key)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ParamSpec":
        from .apis import normalise_type

        props = d.get("properties") or []
        if isinstance(props, dict):  # {name: {type, description}} as FlowBench writes it
            props = [{"name": k, **(v if isinstance(v, dict) else {"type": v})} for k, v in props.items()]
        desc = str(d.get("description", d.get("desc", "")) or "")
        enum = d.get("enum") if isinstance(d.get("enum"), list) else enum_from_text(desc)
        return cls(
            name=str(d["name"]).strip(), type=normalise_type(d.get("type", "str")),
            required=_flag(d.get("required", True)), description=desc, enum=list(enum or []),
            default=d.get("default", default_from_text(desc)), format=str(d.get("format", "") or ""),
            properties=[cls.from_dict(p) for p in props if isinstance(p, dict) and p.get("name")],
            variants=[v for v in d.get("variants") or [] if isinstance(v, dict)],
            examples=list(d["examples"]) if isinstance(d.get("examples"), list) else [],
            pattern=str(d.get("pattern") or ""), minimum=_number(d.get("minimum")), maximum=_number(d.get("maximum")),
        )


def _number(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _flag(value: Any) -> bool:
    """``required`` as written: true/false, or the strings "true"/"false"/"yes"/"no"."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1", "required", "y")
    return bool(value)


# "Enumeration type, [Yes, No]", "Enumerated type, [true, false]", "enum: [a, b]", "one of [a, b]"
_ENUM = re.compile(r"(?:enum\w*(?:\s+(?:type|value)s?)?|one of|options?(?: are)?|for example|e\.g\.|such as|values?)"
                   r"\s*[,:：]?\s*[\[【]([^\]】]+)[\]】]|(?:enum\w*(?:\s+(?:type|value)s?)?|one of)\s*[,:：]?\s*\(([^)]+)\)",
                   re.IGNORECASE)
_DEFAULT = re.compile(r"\bdefault(?:s| value)?(?: is| to| value is|:|=)?\s*(?:[\"“']([^\"”']+)[\"”']|"
                      r"([^\"'”.,;()\s][^\"'”.,;()]*))", re.IGNORECASE)
_EXAMPLES = re.compile(r"(?:such as|for example|e\.g\.|example:|like)\s*[,:]?\s*[\"“]([^\"”]+)[\"”]", re.IGNORECASE)


def _clean(v: str) -> str:
    return v.strip().strip("\"'“”‘’`").strip()


def enum_from_text(text: str) -> list[str]:
    """The enumeration a FlowBench description writes out, or []."""
    m = _ENUM.search(text or "")
    if not m:
        return []
    values = [_clean(v) for v in re.split(r"[,，、/]|\bor\b", m.group(1) or m.group(2))]
    return [v for v in values if v][:50]


def range_from_text(text: str) -> tuple[int, int] | None:
    """``from 1 to 12`` / ``between 2 and 8`` / ``1-12`` written in a description."""
    m = re.search(r"(?:from|between)\s+(-?\d+)\s+(?:to|and)\s+(-?\d+)|\b(-?\d+)\s*[-–~]\s*(-?\d+)\b", text or "")
    if not m:
        return None
    lo, hi = (int(x) for x in (m.group(1, 2) if m.group(1) is not None else m.group(3, 4)))
    return (lo, hi) if lo <= hi else None


def default_from_text(text: str) -> str | None:
    m = _DEFAULT.search(text or "")
    if not m:
        return None
    value = _clean(m.group(1) or m.group(2))
    return value if value and len(value) <= 60 else None


def examples_from_text(text: str) -> list[str]:
    """Example values written in a description: ``such as "CA1234, CZ5678"`` -> [CA1234, CZ5678]."""
    out: list[str] = []
    for m in _EXAMPLES.finditer(text or ""):
        body = m.group(1)
        dated = re.search(r"o'?clock|\b\d{1,2}\s*(?:am|pm)\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
                          r"\w*\.?\s+\d{1,2}(?:st|nd|rd|th)?,\s*\d{4}", body, re.I)
        parts = [body] if dated else body.split(",")
        out += [_clean(p) for p in parts if _clean(p)]
    return out


# ----------------------------------------------------------------------------- JSON Schema

def schema_type(schema: Any) -> str:
    """The paper's type string for a JSON Schema fragment (see :class:`.toolspecs.fields.Fields`:
    ``allOf`` merged, unions listed, a type beside ``anyOf`` applied to its members)."""
    from .toolspecs.fields import type_of

    return type_of(schema)


def params_from_schema(schema: Any) -> list[ParamSpec]:
    """One ParamSpec per property of an object schema (nested objects keep their properties)."""
    if not isinstance(schema, dict):
        return []
    props = schema.get("properties")
    if not isinstance(props, dict):
        return []
    required = set(schema.get("required") or []) if isinstance(schema.get("required"), list) else set()
    return [param_from_schema(str(n), s, n in required) for n, s in props.items()]


def param_from_schema(name: str, schema: Any, required: bool) -> ParamSpec:
    s = schema if isinstance(schema, dict) else {}
    desc = str(s.get("description", "") or s.get("title", "") or "")
    enum = s.get("enum") if isinstance(s.get("enum"), list) else enum_from_text(desc)
    nested = s
    if s.get("type") == "array" and isinstance(s.get("items"), dict):
        nested = s["items"]
    return ParamSpec(
        name=name, type=schema_type(s), required=required, description=desc,
        enum=[e for e in (enum or []) if e is not None],
        default=s.get("default", default_from_text(desc)), format=str(s.get("format", "") or ""),
        properties=params_from_schema(nested),
        examples=[e for e in (s.get("examples") if isinstance(s.get("examples"), list) else
                              [s["example"]] if "example" in s else []) if e is not None],
        pattern=str(s.get("pattern") or "") if isinstance(s.get("pattern"), str) else "",
        minimum=_number(s.get("minimum")), maximum=_number(s.get("maximum")),
    )

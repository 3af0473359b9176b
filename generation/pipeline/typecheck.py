"""A small checker for Python typing expressions against JSON values (``list[dict[str, str]]``).

API outputs are declared with Python typing names (paper A.3); a conversation's api_output must be
JSON of that type. Unknown names (``Customer``, ``Order``) are domain objects, i.e. JSON objects.
"""
from __future__ import annotations

from typing import Any


class TypeExprError(ValueError):
    pass


def _split_top(text: str, sep: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur).strip())
    return parts


def parse_type(expr: str) -> tuple[str, list]:
    """Parse into (head, args): ``"list[int]" -> ("list", [("int", [])])``."""
    text = expr.strip()
    if not text:
        raise TypeExprError("empty type")
    union = _split_top(text, "|")
    if len(union) > 1:
        return ("union", [parse_type(u) for u in union])
    if "[" in text:
        if not text.endswith("]"):
            raise TypeExprError(f"unbalanced brackets in {expr!r}")
        head, inner = text[: text.index("[")].strip(), text[text.index("[") + 1: -1]
        args = [parse_type(a) for a in _split_top(inner, ",") if a]
        head = head.split(".")[-1]
        if head.lower() == "optional":
            return ("union", args + [("none", [])])
        if head.lower() == "union":
            return ("union", args)
        return (head.lower(), args)
    low = text.split(".")[-1].lower()
    if low in ("none", "nonetype", "null"):
        return ("none", [])
    return (low, [])


_SCALARS = {
    "str": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "none": lambda v: v is None,
    "any": lambda v: True,
    "object": lambda v: True,
}


def matches(value: Any, expr: str | tuple) -> bool:
    """True when the JSON ``value`` conforms to the typing expression."""
    head, args = parse_type(expr) if isinstance(expr, str) else expr
    if head == "union":
        return any(matches(value, a) for a in args)
    if head in _SCALARS:
        return _SCALARS[head](value)
    if head in ("list", "sequence", "tuple", "set"):
        if not isinstance(value, list):
            return False
        if not args or head == "tuple":
            return True
        return all(matches(v, args[0]) for v in value)
    if head in ("dict", "mapping"):
        if not isinstance(value, dict):
            return False
        if len(args) == 2:
            return all(matches(v, args[1]) for v in value.values())
        return True
    if head == "literal":
        return True
    # A domain type name such as Customer: the JSON form is an object.
    return isinstance(value, dict)


def is_known_type(expr: str) -> bool:
    try:
        parse_type(expr)
    except TypeExprError:
        return False
    return True

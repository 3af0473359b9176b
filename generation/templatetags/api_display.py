"""``api_fields``: an API's parameter or output list with every key the field template reads.

The template ``generation/_api_fields.html`` shows name, type, required, enum, default,
description and nested properties. Most fields carry only a few of those keys, and a missing key
costs Django's variable lookup three failed attempts (dict, attribute, index), each with an
exception: on the review page that made the API table the slowest part of the page. Normalised
here, in one pass, nested properties included.
"""
from __future__ import annotations

from typing import Any

from django import template

register = template.Library()

_KEYS = ("name", "type", "required", "enum", "default", "description")


@register.filter(name="api_fields")
def api_fields(fields: Any) -> list[dict[str, Any]]:
    if not isinstance(fields, list):
        return []
    out = []
    for p in fields:
        p = p if isinstance(p, dict) else {}
        row = {k: p.get(k) for k in _KEYS}
        props = p.get("properties")
        row["properties"] = api_fields(props) if props else None
        out.append(row)
    return out

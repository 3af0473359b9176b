"""Template filters for the evaluation pages."""
from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def pp_signed(value: float | None) -> str:
    """A difference of two fractions as signed percentage points: 0.125 -> "+12.5"."""
    if value is None:
        return "–"
    points = 100 * float(value)
    return f"{points:+.1f}" if round(points, 1) != 0 else "0.0"


@register.filter
def get_item(mapping, key):
    """mapping[key] in a template (None when absent or not a mapping)."""
    return mapping.get(key) if isinstance(mapping, dict) else None

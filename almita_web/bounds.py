"""Integer bounds for everything a request can carry: path ids, query filters, form and JSON ids.

Databases store ids as 64-bit integers; Python's are unbounded. An id past the range reaches the
database driver and raises OverflowError (SQLite) or a DataError (Postgres): a 500. Every integer
that comes from a request is checked here first, so it becomes a 400 naming the field.
"""
from __future__ import annotations

import json
import re

from django import forms
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

MAX_ID = 2**63 - 1  # the largest value a BIGINT column holds


def in_id_range(value: int) -> bool:
    return 0 <= value <= MAX_ID


def bounded_id(value, name: str = "id") -> int:
    """`value` as a non-negative 64-bit id, or ValueError naming `name`."""
    if isinstance(value, bool):
        raise ValueError(f"{name}: {value!r} is not an id")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: {value!r} is not an id") from None
    if isinstance(value, float) and number != value:
        raise ValueError(f"{name}: {value!r} is not a whole number")
    if not in_id_range(number):
        raise ValueError(f"{name}: {value!r} is out of range (0 to {MAX_ID})")
    return number


def _out_of_range(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return not in_id_range(value)
    # DRF routers capture ids as strings ([^/.]+): check the ones that are numbers.
    return isinstance(value, str) and value.isdigit() and len(value) > 18 and int(value) > MAX_ID


class BoundedPathIdsMiddleware:
    """A path id past the 64-bit range is a 400 (JSON under /api/), before any view runs."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):
        bad = [k for k, v in view_kwargs.items() if _out_of_range(v)]
        bad += [str(i) for i, v in enumerate(view_args) if _out_of_range(v)]
        if not bad:
            return None
        message = f"{', '.join(bad)}: the id is out of range (0 to {MAX_ID})."
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": message}, status=400)
        body = render_to_string("400.html", {"message": message}, request=request)
        return HttpResponse(body, status=400)


def json_ids(values, name: str) -> list[int]:
    """A JSON list of ids (as in release filters), each bounded; ValueError names the field."""
    if not isinstance(values, (list, tuple)):
        raise ValueError(f"{name} must be a list of ids, not {json.dumps(values)[:40]}")
    return [bounded_id(v, name) for v in values]


def bounded_ids_or_none(values, name: str = "id") -> list[int] | None:
    """Every value as a bounded id, or None when one is not (query strings: ?runs=1&runs=2)."""
    try:
        return [bounded_id(v, name) for v in values]
    except ValueError:
        return None


def _checked(field, value, code: str, key: str):
    """`value` unchanged, or the field's own "not a choice" error when it is an id past 64 bits.

    Django catches ValueError and TypeError from a model choice lookup, but an id past 64 bits
    raises OverflowError on SQLite (a 500).
    """
    text = str(value).strip()
    if value not in field.empty_values and re.fullmatch(r"[-+]?\d+", text) and (len(text) > 20 or not in_id_range(int(text))):
        raise ValidationError(field.error_messages[code], code=code, params={key: str(value)[:40]})
    return value


class BoundedModelChoiceField(forms.ModelChoiceField):
    def to_python(self, value):
        return super().to_python(_checked(self, value, "invalid_choice", "value"))


class BoundedModelMultipleChoiceField(forms.ModelMultipleChoiceField):
    def _check_values(self, value):
        for v in value:
            _checked(self, v, "invalid_pk_value", "pk")
        return super()._check_values(value)

"""How a predicted API call is compared with the expected one (docs/metrics.md). Pure, no Django.

* exact (default): API and parameter names as strings; values after JSON-type normalisation only
  (:func:`json_value`: "812" = 812, "true" = True; other strings exactly);
* lenient: names lower-cased with spaces as "_", values case- and space-insensitive
  (:func:`normalise_value`), the comparison used before; a named, reported option.
"""
from __future__ import annotations

import math
import re
from typing import Any

EXACT = "exact"
LENIENT = "lenient"
COMPARISONS: dict[str, str] = {
    EXACT: "API and parameter names exactly; parameter values exactly after JSON-type normalisation (812 = \"812\")",
    LENIENT: "lenient: names and string values ignore case and spacing (Get_Order_Details = get order details)",
}

_SPACE = re.compile(r"\s+")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_BOOLS = {"true": True, "yes": True, "false": False, "no": False}
_NULLS = {"", "none", "null"}


def normalise_value(value: Any) -> Any:
    """A canonical form so that 812, "812", " 812 " and 812.0 compare equal, and so do
    "John  Smith" and "john smith", True and "true", None and "null"; lists and dicts recurse."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
            return str(value)
        return int(value) if float(value).is_integer() else round(float(value), 9)
    if isinstance(value, str):
        text = _SPACE.sub(" ", value).strip()
        low = text.lower()
        if low in _NULLS:
            return None
        if low in _BOOLS:
            return _BOOLS[low]
        plain = text.replace(",", "") if re.fullmatch(r"[+-]?\d{1,3}(,\d{3})+(\.\d+)?", text) else text
        if _NUMBER.match(plain):
            return normalise_value(float(plain)) if not re.fullmatch(r"[+-]?0\d+", plain) else low
        return low
    if isinstance(value, dict):
        return {normalise_key(k): normalise_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        items = [normalise_value(v) for v in value]
        return items if not isinstance(value, set) else sorted(items, key=repr)
    return normalise_value(str(value))


_JSON_NUMBER = re.compile(r"^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$")
_JSON_LITERALS = {"true": True, "false": False, "null": None}


def json_value(value: Any) -> Any:
    """JSON-type normalisation, the exact comparison's only leniency: a string that is a JSON
    number or literal becomes that value ("812" -> 812, " 812 " -> 812, "true" -> True), integral
    floats become ints (812.0 -> 812); every other string is kept as it is (case, spaces, leading
    zeros: "0812" stays a string and differs from 812). Lists and dicts recurse; keys are kept."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
            return str(value)
        return int(value) if float(value).is_integer() else float(value)
    if isinstance(value, str):
        text = value.strip()
        if text in _JSON_LITERALS:
            return _JSON_LITERALS[text]
        if _JSON_NUMBER.match(text):
            return json_value(float(text)) if any(c in text for c in ".eE") else int(text)
        return value
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    return str(value)


def names_match(expected: Any, predicted: Any, comparison: str = EXACT) -> bool:
    """API names: identical strings (exact), or equal after lower-casing and spaces to _ (lenient)."""
    if comparison == LENIENT:
        return normalise_name(expected) == normalise_name(predicted)
    return str(expected or "") == str(predicted or "")


def normalise_key(key: Any) -> str:
    return _SPACE.sub("_", str(key).strip()).lower()


def normalise_name(name: Any) -> str:
    return normalise_key(name or "")


def params_match(expected: dict[str, Any] | None, predicted: dict[str, Any] | None,
                 comparison: str = EXACT) -> bool:
    """Same parameter names with equal values: exactly after JSON-type normalisation
    (:func:`json_value`), or after the lenient :func:`normalise_value` / :func:`normalise_key`.

    A predicted parameter left null counts as absent (agents often spell out optional
    parameters they do not use); any other extra or missing parameter is a mismatch.
    """
    if comparison not in COMPARISONS:
        raise ValueError(f"unknown comparison {comparison!r}; choose one of {', '.join(COMPARISONS)}")
    key, value = (normalise_key, normalise_value) if comparison == LENIENT else (str, json_value)
    exp = {key(k): value(v) for k, v in (expected or {}).items()}
    pred = {key(k): value(v) for k, v in (predicted or {}).items()}
    exp = {k: v for k, v in exp.items() if v is not None}
    pred = {k: v for k, v in pred.items() if v is not None}
    return exp == pred

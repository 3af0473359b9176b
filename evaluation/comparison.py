"""How a predicted API call is compared with the expected one (docs/metrics.md, "Comparing
calls"). Pure, no Django.

* **exact** (default): API and parameter names as written; values by JSON type and value. Numbers
  compare by value (``1`` = ``1.0``); ``1``, ``true`` and ``"1"`` are three different values;
  ``null`` equals only ``null``; an absent parameter equals only an absent one (an expected
  ``"null"`` string is not an absent parameter, a predicted ``null`` is not an absent one).
* **lenient**: the one place for coercions, each listed in :data:`LENIENT_RULES` and in
  docs/metrics.md; values are normalised by :func:`normalise_value`, then compared by the same
  typed rule (so ``1`` and ``true`` differ in both modes).

:func:`param_differences` says which parameters differ (missing, extra, different values with
their JSON types); every message that reports a wrong call (run page, CSV, JUnit) shows it.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

EXACT = "exact"
LENIENT = "lenient"
COMPARISONS: dict[str, str] = {
    EXACT: "API and parameter names exactly; values by JSON type and value (1 = 1.0; 1, true and \"1\" "
           "differ; null only equals null; absent only equals absent)",
    LENIENT: "lenient: names ignore case and spacing; string values ignore case and spacing; numbers and "
             "booleans written as strings equal them; null, \"\" and absent are the same",
}
LENIENT_RULES = (
    "API and parameter names ignore case and spacing: `Get Order Details` = `get_order_details`",
    "string values ignore case and surrounding or repeated spaces: `  Damaged ` = `damaged`",
    "a string holding a number equals the number: `\"812\"` = `812`, `\"12.50\"` = `12.5`, "
    "`\"1,000\"` = `1000` (a leading zero keeps a string: `\"0812\"` ≠ `812`)",
    "a string `true`/`yes`/`false`/`no` (any case) equals the boolean",
    "`null`, `\"\"`, `\"null\"`, `\"none\"` and an absent parameter (or object member) are the same",
)

_SPACE = re.compile(r"\s+")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_BOOLS = {"true": True, "yes": True, "false": False, "no": False}
_NULLS = {"", "none", "null"}


def _check(comparison: str) -> None:
    if comparison not in COMPARISONS:
        raise ValueError(f"unknown comparison {comparison!r}; choose one of {', '.join(COMPARISONS)}")


# --------------------------------------------------------------------------- typed equality


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def same_value(a: Any, b: Any) -> bool:
    """JSON equality by type and value: numbers by value (1 = 1.0), never across types (Python's
    ``True == 1`` and ``1 == 1.0`` are not JSON's rules; only the second one holds)."""
    ta, tb = json_type(a), json_type(b)
    if ta != tb:
        return False
    if ta == "array":
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if ta == "object":
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return a == b


def show(value: Any) -> str:
    """A value as JSON text with its type: ``"812" (string)``."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return f"{text[:80]}{'…' if len(text) > 80 else ''} ({json_type(value)})"


# --------------------------------------------------------------------------- lenient coercions


def normalise_key(key: Any) -> str:
    return _SPACE.sub("_", str(key).strip()).lower()


def normalise_name(name: Any) -> str:
    return normalise_key(name or "")


def normalise_value(value: Any) -> Any:
    """The lenient form of a value (LENIENT_RULES): strings trimmed, spaces collapsed and
    lower-cased; strings holding a number, a boolean or a null become that value; lists and
    objects recurse. Compare the results with :func:`same_value`."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
            return str(value).lower()
        return int(value) if float(value).is_integer() else round(float(value), 9)
    if isinstance(value, str):
        text = _SPACE.sub(" ", value).strip()
        low = text.lower()
        if low in _NULLS:
            return None
        if low in _BOOLS:
            return _BOOLS[low]
        plain = text.replace(",", "") if re.fullmatch(r"[+-]?\d{1,3}(,\d{3})+(\.\d+)?", text) else text
        if _NUMBER.match(plain) and not re.fullmatch(r"[+-]?0\d+", plain):
            return normalise_value(float(plain))
        return low
    if isinstance(value, dict):  # a null member is an absent one, at every depth
        pairs = ((normalise_key(k), normalise_value(v)) for k, v in value.items())
        return {k: v for k, v in pairs if v is not None}
    if isinstance(value, (list, tuple)):
        return [normalise_value(v) for v in value]
    return normalise_value(str(value))


# --------------------------------------------------------------------------- calls


def names_match(expected: Any, predicted: Any, comparison: str = EXACT) -> bool:
    """API names: identical strings (exact), or equal ignoring case and spacing (lenient)."""
    _check(comparison)
    if comparison == LENIENT:
        return normalise_name(expected) == normalise_name(predicted)
    return isinstance(expected, str) and isinstance(predicted, str) and expected == predicted


@dataclass
class ParamDiff:
    """Which parameters of a call differ from the expected ones, by name."""

    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    different: list[tuple[str, Any, Any]] = field(default_factory=list)  # (name, expected, got)

    def __bool__(self) -> bool:
        return bool(self.missing or self.extra or self.different)

    def describe(self) -> str:
        parts = [f"{name}: expected {show(exp)}, got {show(got)}" for name, exp, got in self.different]
        if self.missing:
            parts.append("missing " + ", ".join(self.missing))
        if self.extra:
            parts.append("extra " + ", ".join(self.extra))
        return "; ".join(parts)


def param_differences(expected: dict[str, Any] | None, predicted: dict[str, Any] | None,
                      comparison: str = EXACT) -> ParamDiff:
    """The parameters that differ (empty when the call's parameters are right)."""
    _check(comparison)
    exp, pred = dict(expected or {}), dict(predicted or {})
    if comparison == LENIENT:
        exp = {normalise_key(k): normalise_value(v) for k, v in exp.items()}
        pred = {normalise_key(k): normalise_value(v) for k, v in pred.items()}
        exp = {k: v for k, v in exp.items() if v is not None}
        pred = {k: v for k, v in pred.items() if v is not None}
    diff = ParamDiff(missing=sorted(k for k in exp if k not in pred), extra=sorted(k for k in pred if k not in exp))
    diff.different = [(k, _as_written(expected, k, exp), _as_written(predicted, k, pred))
                      for k in sorted(exp.keys() & pred.keys()) if not same_value(exp[k], pred[k])]
    return diff


def _as_written(original: dict[str, Any] | None, key: str, normalised: dict[str, Any]) -> Any:
    """The value as the call wrote it (not its lenient form), for messages."""
    original = original or {}
    if key in original:
        return original[key]
    return next((v for k, v in original.items() if normalise_key(k) == key), normalised.get(key))


def params_match(expected: dict[str, Any] | None, predicted: dict[str, Any] | None,
                 comparison: str = EXACT) -> bool:
    """The same parameter names with equal values under `comparison` (see the module docstring)."""
    return not param_differences(expected, predicted, comparison)

"""What an api out-edge's label says about the call's result, and the output that agrees with it.

An API output is generated *from the edge taken*: the label ("Apartment is not available",
"Order found", "Status is In Transit") is read as a polarity (a failure or not) and, where the
output schema has an enumerated field, as the value it names. :func:`outcome_value` picks that
value for one field; :mod:`.values` builds the whole output with it, and :mod:`.consistency` and
:mod:`.audit` judge outputs with the same reading.
"""
from __future__ import annotations

import re
from typing import Any

_NEGATIVE = re.compile(
    r"\b(not|no|none|fail\w*|error|invalid|unavailable|denied|declin\w*|reject\w*|missing|"
    r"unable|cannot|can't|incorrect|wrong|mismatch\w*|expired|insufficient|unsuccessful|"
    r"locked|suspended|empty|unknown|full|fully booked|sold out|occupied|busy|exceed\w*|over limit|"
    r"too \w+|refus\w*|cancel\w*|closed|absent|unsupported|out of stock|no longer|false|nothing)\b|n't\b",
    re.IGNORECASE,
)


def is_negative_outcome(label: str) -> bool:
    """Does an api out-edge label (or an output value) describe a failure ("Order not Found")?"""
    return bool(_NEGATIVE.search(str(label or "")))


def value_is_negative(value: Any) -> bool:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value == 0
    return is_negative_outcome(str(value)) or str(value).strip().lower() in ("0", "n", "off")


def names(value: Any, label: str) -> bool:
    """Is ``value`` written in ``label`` as a whole phrase?"""
    text = str(value).strip().lower()
    return bool(text) and bool(re.search(r"(?<!\w)" + re.escape(text) + r"(?!\w)", (label or "").lower()))


def outcome_value(values: list[Any], label: str) -> tuple[list[Any], bool]:
    """(the values of an enumerated field that agree with ``label``, whether the field decides).

    A value named by the label whose polarity is the label's wins (the longest when several are
    named: "cannot be found" over "found"); else, when the field has values of both polarities,
    those of the label's polarity; else the field does not decide and every value is returned."""
    negative = is_negative_outcome(label)
    named = [v for v in values if names(v, label) and value_is_negative(v) == negative]
    if named:
        longest = max(len(str(v)) for v in named)
        return [v for v in named if len(str(v)) == longest], True
    same = [v for v in values if value_is_negative(v) == negative]
    if same and len(same) < len(values):
        return same, True
    return list(values), False


STATUS_FIELD = re.compile(r"(status|result|message|outcome|state|detail|msg|response|info)", re.I)

"""Typed comparison of API calls (evaluation/comparison.py): exact compares JSON by type and value,
lenient applies exactly the coercions docs/metrics.md lists, and every difference is named."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluation import comparison as C

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"

# (expected, predicted, exact equal?, lenient equal?) for one parameter "p"; ABSENT = not given.
ABSENT = object()
CASES = [
    (1, 1.0, True, True),
    (1, True, False, False),
    (True, 1, False, False),
    (False, 0, False, False),
    (True, "1", False, False),
    (1, "1", False, True),
    (812, "812", False, True),
    (812, " 812 ", False, True),
    (12.5, "12.50", False, True),
    (1000, "1,000", False, True),
    (812, "0812", False, False),
    (True, "true", False, True),
    (False, "No", False, True),
    (None, None, True, True),
    (None, "null", False, True),
    ("null", ABSENT, False, True),
    (None, ABSENT, False, True),
    (ABSENT, None, False, True),
    (ABSENT, ABSENT, True, True),
    ("", ABSENT, False, True),
    ("damaged", "  Damaged ", False, True),
    ("John Smith", "john  smith", False, True),
    ("AB12cd", "ab12CD", False, True),
    ("refund", "refunded", False, False),
    ([1, 2], [1.0, 2], True, True),
    ([1, 2], [2, 1], False, False),
    ([1, "2"], ["1", 2], False, True),
    ({"a": 1}, {"a": True}, False, False),
    ({"a": 1}, {"a": 1, "b": None}, False, True),
    ({"A b": "X"}, {"a_b": "x"}, False, True),
]


def _params(value) -> dict:
    return {} if value is ABSENT else {"p": value}


@pytest.mark.parametrize("expected,predicted,exact,lenient", CASES)
def test_exact_is_typed_and_lenient_is_the_place_for_coercions(expected, predicted, exact, lenient):
    assert C.params_match(_params(expected), _params(predicted), C.EXACT) is exact
    assert C.params_match(_params(expected), _params(predicted), C.LENIENT) is lenient


def test_names():
    assert C.names_match("get_order_details", "get_order_details")
    assert not C.names_match("get_order_details", "Get_Order_Details")
    assert C.names_match("get_order_details", "Get Order Details", C.LENIENT)
    assert not C.params_match({"Order_ID": 1}, {"order_id": 1})
    assert C.params_match({"Order_ID": 1}, {"order id": 1}, C.LENIENT)
    with pytest.raises(ValueError, match="unknown comparison"):
        C.params_match({}, {}, "fuzzy")


def test_differences_are_named_with_their_json_types():
    diff = C.param_differences({"order_id": 812, "reason": "lost", "email": "a@b.c"},
                               {"order_id": "812", "reason": "lost", "note": None, "extra": 1})
    assert diff.missing == ["email"] and diff.extra == ["extra", "note"]
    assert diff.describe() == ('order_id: expected 812 (number), got "812" (string); missing email; '
                               "extra extra, note")
    assert C.param_differences({"flag": True}, {"flag": "1"}).describe() == \
        'flag: expected true (boolean), got "1" (string)'
    lenient = C.param_differences({"Reason": "Lost"}, {"reason": " LOST", "note": ""}, C.LENIENT)
    assert not lenient  # case, spacing and an empty optional parameter are all coercions
    assert C.param_differences({"q": 1}, {"q": True}, C.LENIENT).describe() == "q: expected 1 (number), got true (boolean)"


def test_every_lenient_coercion_is_listed_in_docs_metrics_md():
    text = DOC.read_text(encoding="utf-8")
    for rule in C.LENIENT_RULES:
        assert rule in text, rule


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(-3, 3, allow_nan=False),
                         st.sampled_from(["", "1", "true", "a", "A ", "null"]))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("abc"), inner, max_size=3)), max_leaves=8)


def _plain_equal(a, b) -> bool:
    """A second definition of exact equality: JSON text after mapping every number to a float,
    with the type of each scalar spelled out (so 1 and true, or 1 and "1", never meet)."""
    def tag(v):
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return [type(v).__name__, v]
        if isinstance(v, (int, float)):
            return ["number", float(v) + 0.0]  # -0.0 is 0
        if isinstance(v, list):
            return ["array", [tag(x) for x in v]]
        return ["object", {k: tag(x) for k, x in v.items()}]
    return json.dumps(tag(a), sort_keys=True) == json.dumps(tag(b), sort_keys=True)


@given(json_values, json_values)
def test_exact_equality_agrees_with_a_plain_definition(a, b):
    assert C.same_value(a, b) is _plain_equal(a, b)
    assert C.same_value(a, a)
    assert C.params_match({"p": a}, {"p": b}) is _plain_equal(a, b)


@given(json_values, json_values)
def test_lenient_accepts_everything_exact_accepts(a, b):
    if C.params_match({"p": a}, {"p": b}):
        assert C.params_match({"p": a}, {"p": b}, C.LENIENT)

"""Reply parsing in the stages: JSON in fences or prose, lists under any one key."""
from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from generation.stages import content_seed, list_in, parse_json_reply, split_key

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@given(st.one_of(st.dictionaries(st.text(max_size=8), json_values, max_size=4), st.lists(json_values, max_size=4)))
def test_json_round_trips_with_fences_and_prose(value):
    text = json.dumps(value)
    assert parse_json_reply(text) == value
    assert parse_json_reply(f"```json\n{text}\n```") == value
    if isinstance(value, dict):
        assert parse_json_reply(f"Here you go:\n{text}\nHope this helps.") == value


@pytest.mark.parametrize("reply", ["", "   ", "not json at all", '{"apis": [', "```\n```"])
def test_unparseable_replies_raise_value_error(reply):
    with pytest.raises(ValueError):
        parse_json_reply(reply)


def test_list_in():
    assert list_in([1], "x") == [1]
    assert list_in({"intents": [1], "other": [2]}, "intents") == [1]
    assert list_in({"whatever": [3]}, "intents") == [3]
    assert list_in({"a": [1], "b": [2]}, "intents") is None
    assert list_in("text", "intents") is None


@given(st.integers(0, 10**6), st.text(max_size=30))
def test_content_seed_is_stable_and_bounded(seed, text):
    assert content_seed(seed, text) == content_seed(seed, text)
    assert seed * 1_000_003 <= content_seed(seed, text) < (seed + 1) * 1_000_003


def test_split_key():
    assert split_key("conversations:3:p12") == ("conversations", 3, "p12")
    assert split_key("intents:0:batch") == ("intents", 0, "batch")

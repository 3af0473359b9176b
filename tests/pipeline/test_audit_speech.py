"""The speech check's shortcut (one alternation first, one search for all API names) finds exactly
what checking each pattern and each name on its own finds: a plain reference, random turns."""
from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from generation.pipeline.audit import _FRAGMENTS, _SCAFFOLD, speech_findings

NAMES = ["get_order", "get_order_items", "cancel", "book_flight", "findFlat", "Subgoal", "a.b(c)", "x"]
PIECES = ["Let me check", "Let me subgoal", "Do you are", "you your", "3. Let me", "?!", "Step 2.1:",
          "Goal:", "Thought:", "[Yes]", "{name}", "the customer", "snake_case", "get_order", "get_order_items",
          "GET_ORDER", "cancel", "cancelled", "book_flight.", "findFlat", "a.b(c)", "x", "Hello", "order 85270",
          "\n", " ", ",", "ünïcode", "Ok.", "Let me know"]


def reference(text: str, tool_names: list[str]) -> list[str]:
    found = [why for pattern, why in _SCAFFOLD + _FRAGMENTS if pattern.search(text or "")]
    for name in tool_names:
        if name and len(name) > 3 and re.search(r"(?<!\w)" + re.escape(name) + r"(?!\w)", text or ""):
            found.append(f"the API name {name}")
    return found


@settings(max_examples=600, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=6)), max_size=12),
       st.lists(st.sampled_from(NAMES), max_size=5))
def test_speech_findings_agree_with_the_plain_reference(pieces, names):
    text = " ".join(pieces)
    assert speech_findings(text, names) == reference(text, names)


def test_clean_turn_and_named_api():
    assert speech_findings("Your order has shipped.", ["get_order"]) == []
    assert speech_findings("I ran get_order_items now.", ["get_order", "get_order_items"]) == [
        "a snake_case name", "the API name get_order_items"]

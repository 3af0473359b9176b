"""ToolDial action labels on ALMITA turns, checked by hand on the paper's A.6 example conversation."""
from __future__ import annotations

import pytest

from generation.pipeline import dialogue_actions as DA
from generation.pipeline.extract import extract_tests

# The A.6 one-shot conversation (paper appendix; the api_output as the HTML copy has it).
A6 = [
    {"role": "user", "content": "I didn't receive my order"},
    {"role": "assistant", "content": "Can you give me the order ID?"},
    {"role": "user", "content": "The order ID is #812"},
    {"role": "api", "content": "get_order_details(order_id=812)"},
    {"role": "api_output", "content": '{"sent_status": [{"item": "Product1", "status": "shipped"}]}'},
    {"role": "assistant", "content": "I couldn't find your order."},
]


def test_a6_turns_by_hand():
    # user states a specific need without a value; the agent asks for the id; the user gives it;
    # the agent calls; the output is an observation; the agent answers from the API result.
    assert DA.label_turns(A6) == ["inform_intent_clear", "request", "inform", "call", None, "response"]


def test_a6_tests_expected_actions_by_hand():
    tests = extract_tests(A6)
    got = [(t["position"], DA.answer_action(t["context"], t["expected"])) for t in tests]
    assert got == [(1, "request"), (3, "call"), (5, "response")]


@pytest.mark.parametrize("text,previous,action", [
    ("Goodbye, have a nice day!", "user", "system_bye"),
    ("Is there anything else I can help you with?", "user", "system_bye"),
    ("Sorry, I cannot cancel an order that has shipped.", "user", "response_fail"),
    ("I can only help with your order.", "user", "response_fail"),
    ("Would you like me to cancel it?", "user", "suggest"),
    ("Could you clarify which order you mean?", "user", "clarify"),
    ("What is your email address?", "user", "request"),
    ("Your refund has been issued.", "user", "response"),
    ("Your refund has been issued.", "api_output", "response"),
])
def test_system_actions(text, previous, action):
    assert DA.system_action(text, previous) == action


@pytest.mark.parametrize("text,first,action", [
    ("Please refund order 900", True, "inform_intent_clear_add"),
    ("I have a problem", True, "inform_intent_vague"),
    ("My parcel never arrived and I want a refund", True, "inform_intent_clear"),
    ("I don't know my order number", False, "fail_inform"),
    ("Yes, please do", False, "affirm"),
    ("No, keep it", False, "negate"),
    ("Thanks, bye!", False, "user_bye"),
    ("It is jane@example.com", False, "inform"),
])
def test_user_actions(text, first, action):
    assert DA.user_action(text, first=first) == action


def test_unreadable_answer_is_invalid():
    assert DA.answer_action([], {"type": "invalid", "reason": "x"}) == "invalid"

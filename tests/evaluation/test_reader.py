"""The one answer reader (evaluation/reader.py), pure: every documented shape, one test each, and
the rules docs/agent-protocol.md states (names never rewritten, a name not offered is a call to a
wrong API, an offered API named like a reply synonym is a call, JSON in content, two calls)."""
from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluation import reader as R

OFFERED = ["get_order_details", "send_message", "refund_order"]
CALL = {"type": "api_call", "name": "get_order_details", "parameters": {"order_id": 812}}
ARGS = json.dumps({"order_id": 812})


def fc(name: str = "get_order_details", args: str = ARGS) -> dict:
    return {"id": "c1", "type": "function", "function": {"name": name, "arguments": args}}


# Every shape a call is written in, for the transports that accept it. Each reads as CALL.
CALL_TEXTS = {
    "a8": '{"type": "get_order_details", "parameters": {"order_id": 812}}',
    "tagged": '{"type": "api_call", "name": "get_order_details", "parameters": {"order_id": 812}}',
    "tagged_arguments_text": '{"type": "api_call", "name": "get_order_details", "arguments": "{\\"order_id\\": 812}"}',
    "function_call": '{"type": "function_call", "name": "get_order_details", "arguments": {"order_id": 812}}',
    "tool_use": '{"type": "tool_use", "name": "get_order_details", "input": {"order_id": 812}}',
    "nested_function": '{"type": "function", "function": {"name": "get_order_details", "arguments": "{\\"order_id\\": 812}"}}',
    "tool_calls_object": json.dumps({"tool_calls": [fc()]}),
    "untagged": '{"name": "get_order_details", "arguments": {"order_id": 812}}',
    "name_in_parameters": '{"type": "api_call", "parameters": {"name": "get_order_details", "parameters": {"order_id": 812}}}',
    "fenced_with_prose": 'Let me look.\n```json\n{"type": "get_order_details", "parameters": {"order_id": 812}}\n```',
    "python_literal": "{'type': 'get_order_details', 'parameters': {'order_id': 812}}",
}


@pytest.mark.parametrize("shape", sorted(CALL_TEXTS))
def test_every_call_shape_reads_as_the_same_call_in_a_prompt_answer(shape):
    assert R.read_json_prompt(CALL_TEXTS[shape], OFFERED) == CALL


@pytest.mark.parametrize("shape", sorted(CALL_TEXTS))
def test_every_call_shape_in_message_content_reads_as_the_same_call(shape):
    """JSON in content: a function-calling, own-prompt or HTTP agent that writes its call as
    text gets the same action as a prompt agent writing the same text."""
    assert R.read_chat(CALL_TEXTS[shape], None, OFFERED) == CALL
    body = json.dumps({"role": "assistant", "content": CALL_TEXTS[shape]}).encode()
    assert R.read_http(200, body, OFFERED) == CALL


HTTP_BODIES = {
    "assistant_tool_call": {"role": "assistant", "content": None, "tool_calls": [fc()]},
    "completion": {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [fc()]}}]},
    "type_api_call": {"type": "api_call", "name": "get_order_details", "parameters": {"order_id": 812}},
    "untagged": {"name": "get_order_details", "arguments": {"order_id": 812}},
    "legacy_function_call": {"role": "assistant", "function_call": {"name": "get_order_details", "arguments": ARGS}},
    "message_wrapper": {"message": {"role": "assistant", "tool_calls": [fc()]}},
    "arguments_object": {"role": "assistant", "tool_calls": [{"function": {"name": "get_order_details",
                                                                          "arguments": {"order_id": 812}}}]},
}


@pytest.mark.parametrize("shape", sorted(HTTP_BODIES))
def test_every_http_call_shape_reads_as_the_same_call(shape):
    assert R.read_http(200, json.dumps(HTTP_BODIES[shape]).encode(), OFFERED) == CALL


@pytest.mark.parametrize("body", [
    {"role": "assistant", "content": "Your order id?"}, {"type": "reply", "content": "Your order id?"},
    {"choices": [{"message": {"role": "assistant", "content": "Your order id?"}}]},
    {"content": "Your order id?"}, {"type": "message", "text": "Your order id?"},
    {"role": "assistant", "content": [{"type": "text", "text": "Your order id?"}]},
    {"role": "assistant", "content": '{"type": "reply", "parameters": {"content": "Your order id?"}}'},
])
def test_reply_shapes(body):
    assert R.read_http(200, json.dumps(body).encode(), OFFERED) == {"type": "reply", "content": "Your order id?"}


def test_names_are_never_rewritten_and_an_unoffered_name_is_a_call_to_a_wrong_api():
    upper = R.read_json_prompt('{"type": "Get_Order_Details", "parameters": {"order_id": 812}}', OFFERED)
    assert upper["type"] == "api_call" and upper["name"] == "Get_Order_Details"
    assert "only in case" in upper["note"]
    for action in (R.read_chat(None, [fc("greet", "{}")], OFFERED),
                   R.read_http(200, json.dumps({"role": "assistant", "tool_calls": [fc("greet", "{}")]}).encode(), OFFERED),
                   R.read_json_prompt('{"type": "greet", "parameters": {}}', OFFERED)):
        assert action["type"] == "api_call" and action["name"] == "greet"
        assert action["note"] == "greet is not one of the APIs offered: a call to a wrong API"


@pytest.mark.parametrize("word", ["send_message", "Send_Message"])
def test_an_offered_api_named_like_a_reply_synonym_is_a_call_in_every_transport(word):
    text = json.dumps({"type": word, "parameters": {"content": "hi"}})
    for action in (R.read_json_prompt(text, OFFERED), R.read_chat(text, None, OFFERED),
                   R.read_http(200, text.encode(), OFFERED)):
        assert action["type"] == "api_call" and action["name"] == word and action["parameters"] == {"content": "hi"}
    # Not offered: a reply synonym. And the A.8 "reply" is always a reply.
    assert R.read_json_prompt(text, ["get_order_details"]) == {"type": "reply", "content": "hi"}
    assert R.read_json_prompt('{"type": "reply", "parameters": {"content": "x"}}', ["reply"])["type"] == "reply"


def test_two_tool_calls_score_the_first_and_say_so():
    action = R.read_chat(None, [fc(), fc("refund_order", "{}")], OFFERED)
    assert {k: action[k] for k in ("type", "name", "parameters")} == CALL
    assert action["note"] == "the agent made 2 calls at once; the first is scored (refund_order not scored)"


def test_plain_text_is_a_reply_for_message_agents_and_unreadable_for_the_json_prompt():
    assert R.read_chat("Could you give me your order id?", None, OFFERED)["type"] == "reply"
    action = R.read_json_prompt("Could you give me your order id?", OFFERED)
    assert action == {"type": "invalid", "fault": "unreadable",
                      "reason": "the answer is not a JSON object: Could you give me your order id?"}
    # JSON that is no action stays text for a message agent: {"name": "Bob"} names no offered API.
    assert R.read_chat('{"name": "Bob", "age": 3}', None, OFFERED) == {"type": "reply", "content": '{"name": "Bob", "age": 3}'}


@pytest.mark.parametrize("status,body,fault,reason", [
    (500, b'{"error": "boom"}', "outage", 'HTTP 500: {"error": "boom"}'),
    (401, b"no", "outage", "HTTP 401: no"),
    (200, b"I think I should greet", "unreadable", "the response is not valid JSON"),
    (200, b'{"type": "reply", "content": ', "unreadable", "the response is not valid JSON"),
    (200, b"[1, 2]", "unreadable", "JSON but not an object"),
    (200, b'{"foo": 1}', "unreadable", "no 'type'"),
    (200, b'{"type": "reply", "content": ""}', "unreadable", "a reply without any text"),
    (200, b'{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]}', "unreadable",
     "not valid JSON"),
    (200, b'{"role": "assistant", "content": 5}', "unreadable", "content is not text"),
    (200, b'{"choices": []}', "unreadable", "no message"),
])
def test_http_errors_say_whether_the_agent_answered(status, body, fault, reason):
    action = R.read_http(status, body, OFFERED)
    assert action["type"] == "invalid" and action["fault"] == fault and reason in action["reason"]


def test_values_keep_their_json_types():
    action = R.read_json_prompt('{"type": "f", "parameters": {"a": "812", "b": 812, "c": 1.5, "d": true, "e": null}}')
    assert action["parameters"] == {"a": "812", "b": 812, "c": 1.5, "d": True, "e": None}
    assert type(action["parameters"]["d"]) is bool
    tuple_ = R.read_json_prompt("{'type': 'f', 'parameters': {'ids': (1, 2)}}")
    assert tuple_["parameters"] == {"ids": [1, 2]}


@given(st.text(max_size=200), st.binary(max_size=200), st.integers(100, 599))
def test_the_reader_never_raises_and_always_gives_a_canonical_action(text, body, status):
    for action in (R.read_json_prompt(text, OFFERED), R.read_chat(text, None, OFFERED),
                   R.read_chat(None, [{"name": text, "arguments": text}], OFFERED),
                   R.read_http(status, body, OFFERED), R.read_http(200, text.encode(), OFFERED)):
        assert action["type"] in ("reply", "api_call", "invalid")
        if action["type"] == "invalid":
            assert action["reason"] and action["fault"] in ("unreadable", "outage")
        elif action["type"] == "api_call":
            assert action["name"] and isinstance(action["parameters"], dict)
        else:
            assert action["content"] == action["content"].strip() and action["content"]
        json.dumps(action)

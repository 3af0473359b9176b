"""Prompt building, tools from APIs, answer parsing and reference agents (no database)."""
from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluation import agents as A
from evaluation import reader as R
from tests.evaluation.conftest import APIS, FLOWGRAPH, PROCEDURE

DATA = {"procedure": PROCEDURE, "apis": APIS, "flowgraph": FLOWGRAPH,
        "context": [{"role": "user", "content": "Late order"}, {"role": "api", "content": "get_order_details(order_id=1)"},
                    {"role": "api_output", "content": {"order": {"status": "lost"}}}],
        "expected": {"type": "api_call", "name": "refund_order", "parameters": {"order_id": 1, "reason": "lost"}}}


@pytest.mark.parametrize("knowledge,marker", [("procedure", "<procedure>"), ("mermaid", "flowchart TD"),
                                              ("code", "def step_")])
def test_prompt_carries_knowledge_actions_and_conversation(knowledge, marker):
    system, user = A.build_messages(DATA, knowledge=knowledge)
    assert marker in system["content"] and '"refund_order"' in system["content"]
    assert '"type": "reply"' in system["content"]
    assert user["content"] == ("<conversation>\nuser: Late order\napi: get_order_details(order_id=1)\n"
                               'api_output: {"order": {"status": "lost"}}\n</conversation>')


def test_graph_knowledge_falls_back_to_the_procedure():
    data = {k: v for k, v in DATA.items() if k != "flowgraph"}
    assert A.knowledge_text(data, "mermaid") == ("procedure", PROCEDURE)
    system, _ = A.build_messages(data, knowledge="code", functions=True)
    assert "<procedure>" in system["content"] and "call the matching function" in system["content"]


def test_tools_from_apis_types_and_required():
    tools = A.tools_from_apis(APIS + [{"name": "find", "params": [{"when": "Optional[str]"}, {"name": "ids", "type": "list[int]",
                                                                   "required": False}], "output": "bool"}])
    fn = tools[1]["function"]
    assert fn["parameters"]["required"] == ["order_id", "reason"]
    assert fn["parameters"]["properties"]["reason"] == {"type": "string"}
    find = tools[3]["function"]["parameters"]
    assert find["properties"]["when"] == {"type": "string"}
    assert find["properties"]["ids"] == {"type": "array", "items": {"type": "integer"}}
    assert find["required"] == ["when"]


@pytest.mark.parametrize("text,action", [
    ('{"type": "reply", "parameters": {"content": "Hello"}}', {"type": "reply", "content": "Hello"}),
    ('{"type": "reply", "parameters": {"message": " Hi "}}', {"type": "reply", "content": "Hi"}),
    ('{"type": "reply", "content": "Hey"}', {"type": "reply", "content": "Hey"}),
    ("Sure:\n```json\n{\"type\": \"cancel_order\", \"parameters\": {\"order_id\": 5}}\n```",
     {"type": "api_call", "name": "cancel_order", "parameters": {"order_id": 5}}),
    ("{'type': 'cancel_order', 'parameters': {'order_id': 5}}",
     {"type": "api_call", "name": "cancel_order", "parameters": {"order_id": 5}}),
    ('{"type": "api_call", "name": "x", "parameters": {"a": 1}}', {"type": "api_call", "name": "x", "parameters": {"a": 1}}),
    ('{"type": "get_order_details"}', {"type": "api_call", "name": "get_order_details", "parameters": {}}),
    ('{"type": "x", "parameters": "{\\"a\\": 2}"}', {"type": "api_call", "name": "x", "parameters": {"a": 2}}),
])
def test_parse_json_answer(text, action):
    assert R.read_json_prompt(text) == action


@pytest.mark.parametrize("text,reason", [
    ("", "empty answer"), (None, "empty answer"), ("I will refund you.", "not a JSON object"),
    ('{"parameters": {}}', "no 'type'"), ('{"type": "reply", "parameters": {}}', "without any text"),
    ('{"type": "cancel_order", "parameters": [1, 2]}', "not an object"), ("[1, 2]", "not a JSON object"),
    ('{"type": "api_call", "parameters": {}}', "names no API"),
])
def test_malformed_json_answers_are_invalid_with_a_reason(text, reason):
    action = R.read_json_prompt(text)
    assert action["type"] == "invalid" and reason in action["reason"]


def test_read_chat():
    assert R.read_chat(None, [{"name": "f", "arguments": '{"a": 1}'}]) == \
        {"type": "api_call", "name": "f", "parameters": {"a": 1}}
    assert R.read_chat("", [{"name": "f", "arguments": ""}])["parameters"] == {}
    assert R.read_chat("Hello there", []) == {"type": "reply", "content": "Hello there"}
    assert "not valid JSON" in R.read_chat(None, [{"name": "f", "arguments": "{oops"}])["reason"]
    assert "not an object" in R.read_chat(None, [{"name": "f", "arguments": "[1]"}])["reason"]
    assert R.read_chat("  ", None)["type"] == "invalid"


@given(st.text(max_size=200))
def test_parsers_never_raise(text):
    for action in (R.read_json_prompt(text), R.read_chat(text, [{"name": "f", "arguments": text}]),
                   R.read_chat(text, None), R.read_http(200, text.encode())):
        assert action["type"] in ("reply", "api_call", "invalid")
        if action["type"] == "invalid":
            assert action["reason"]


def test_reference_actions():
    assert A.reference_action("gold", DATA) == DATA["expected"]
    assert A.reference_action("gold", {"expected": {"type": "reply", "content": "ok"}}) == {"type": "reply", "content": "ok"}
    assert A.reference_action("always_reply", DATA)["type"] == "reply"
    assert A.reference_action("first_api", DATA) == {"type": "api_call", "name": "get_order_details", "parameters": {}}
    assert A.reference_action("first_api", {"apis": []})["type"] == "invalid"
    with pytest.raises(ValueError):
        A.reference_action("prompt", DATA)
    json.dumps(A.reference_action("gold", DATA))

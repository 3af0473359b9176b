"""Hand-made cases with their flags worked out from §4.3 and written out (issue #27, item 3).

Each case sends one answer through a real transport — an almita-agent/1 server read by the
runner's client, or the fake OpenAI server read by the product's LLM agents — and checks the six
per-test flags (reply recalled, correct reply, API recalled, correct API, correct parameters,
correct), the predicted type and the reason. Expected actions: a call get_order_details(order_id=812)
or the reply "Could you give me your order id?".
"""
from __future__ import annotations

import json
import socket

import pytest

from evaluation import comparison as C
from evaluation import services
from evaluation import similarity as S
from evaluation.http_agent import HttpAgent
from evaluation.models import Agent, AgentMode
from evaluation.runner import core
from tests.evaluation.http_agents import AgentServer
from tests.fake_openai import Reply, fake_openai, openai_settings  # noqa: F401 - fixtures

APIS = [
    {"name": "get_order_details", "desc": "Look an order up", "params": [{"name": "order_id", "type": "int"}]},
    {"name": "refund_order", "desc": "Refund", "params": [{"name": "order_id", "type": "int"},
                                                          {"name": "reason", "type": "str"}]},
    {"name": "send_message", "desc": "Text the customer", "params": [{"name": "text", "type": "str"}]},
]
CALL = {"type": "api_call", "name": "get_order_details", "parameters": {"order_id": 812}}
REPLY = {"type": "reply", "content": "Could you give me your order id?"}
# (reply_recalled, reply_correct, api_recalled, api_correct, params_correct, correct)
RIGHT_CALL = (False, False, True, True, True, True)
WRONG_API = (False, False, True, False, False, False)
WRONG_PARAMS = (False, False, True, True, False, False)
NO_CALL = (False, False, False, False, False, False)
FLAGS = ("reply_recalled", "reply_correct", "api_recalled", "api_correct", "params_correct", "correct")


def data(expected: dict) -> dict:
    return {"test_id": 1, "conversation_id": 1, "position": 1, "procedure": "Look the order up.", "apis": APIS,
            "context": [{"role": "user", "content": "Where is my order 812?"}], "expected": expected}


def via_http(answer, expected=CALL, **client) -> dict:
    """The runner's record for one HTTP answer: (status, body bytes, delay) or a JSON object."""
    reply = answer if isinstance(answer, tuple) else (200, json.dumps(answer).encode(), 0.0)
    with AgentServer(lambda body: reply) as server:
        action = HttpAgent(url=server.url, retries=0, **client).ask(data(expected)).action
    return core.record_for(data(expected), action, threshold=0.55)


def flags(record: dict) -> tuple:
    return tuple(record[f] for f in FLAGS)


def via_llm(mode: str, expected=CALL, comparison=C.EXACT):
    """The product's outcome for the answer the fake OpenAI server gives (mode prompt: the A.8
    JSON prompt; functions: native function calling)."""
    agent = (Agent.objects.filter(name=f"hand-{mode}").first()
             or services.agent_create(name=f"hand-{mode}", mode=mode, model="fake-model"))
    answer = services.agent_answer(agent, data(expected))
    return services.judge_answer(data(expected), answer.action, scorer=S.get_scorer("lexical"), threshold=0.55,
                                 comparison=comparison)


def outcome_flags(o) -> tuple:
    return tuple(getattr(o, f) for f in FLAGS)


def tool_message(*calls) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for i, (n, a) in enumerate(calls)]}


# --------------------------------------------------------------------------- names


def test_01_a_name_differing_only_in_case_is_a_call_to_a_wrong_api_over_http():
    r = via_http(tool_message(("Get_Order_Details", {"order_id": 812})))
    assert flags(r) == WRONG_API and r["predicted_type"] == "api_call"
    assert r["reason"] == ("called Get_Order_Details instead of get_order_details; Get_Order_Details differs from "
                           "the offered get_order_details only in case: a call to a wrong API")


@pytest.mark.django_db
def test_02_the_same_case_variant_on_the_json_prompt_path_and_under_lenient(fake_openai, openai_settings):
    fake_openai.set_handler(lambda b, n: Reply(content='{"type": "Get_Order_Details", "parameters": {"order_id": 812}}'))
    assert outcome_flags(via_llm(AgentMode.PROMPT)) == WRONG_API
    assert outcome_flags(via_llm(AgentMode.FUNCTIONS, comparison=C.LENIENT)) == RIGHT_CALL  # JSON in content


def test_03_an_api_that_is_not_offered_is_a_wrong_api_never_unparseable():
    r = via_http(tool_message(("greet", {})))
    assert flags(r) == WRONG_API and "greet is not one of the APIs offered" in r["reason"]


def test_04_the_untagged_name_and_arguments_shape_is_read_over_http():
    assert flags(via_http({"name": "get_order_details", "arguments": {"order_id": 812}})) == RIGHT_CALL


def test_05_send_message_offered_is_a_call_not_a_reply():
    r = via_http({"type": "send_message", "parameters": {"text": "Your order id?"}}, expected=REPLY)
    assert flags(r) == NO_CALL and r["predicted_type"] == "api_call"
    assert r["reason"] == "a call to send_message where a reply was expected"
    expected = {"type": "api_call", "name": "send_message", "parameters": {"text": "hi"}}
    assert flags(via_http({"type": "send_message", "parameters": {"text": "hi"}}, expected=expected)) == RIGHT_CALL


# --------------------------------------------------------------------------- values


def test_06_the_string_812_is_not_the_number_812():
    r = via_http(tool_message(("get_order_details", {"order_id": "812"})))
    assert flags(r) == WRONG_PARAMS
    assert r["reason"] == 'parameters of get_order_details: order_id: expected 812 (number), got "812" (string)'


@pytest.mark.django_db
def test_07_the_string_812_equals_812_under_lenient(fake_openai, openai_settings):
    fake_openai.set_handler(lambda b, n: Reply(tool_calls=[{"name": "get_order_details", "arguments": '{"order_id": "812"}'}]))
    assert outcome_flags(via_llm(AgentMode.FUNCTIONS)) == WRONG_PARAMS
    assert outcome_flags(via_llm("functions", comparison=C.LENIENT)) == RIGHT_CALL


def test_08_an_extra_parameter_is_named():
    r = via_http(tool_message(("get_order_details", {"order_id": 812, "note": "asap"})))
    assert flags(r) == WRONG_PARAMS and r["reason"] == "parameters of get_order_details: extra note"


def test_09_a_missing_parameter_is_named():
    expected = {"type": "api_call", "name": "refund_order", "parameters": {"order_id": 812, "reason": "lost"}}
    r = via_http(tool_message(("refund_order", {"order_id": 812})), expected=expected)
    assert flags(r) == WRONG_PARAMS and r["reason"] == "parameters of refund_order: missing reason"


def test_10_one_equals_one_point_zero():
    assert flags(via_http(tool_message(("get_order_details", {"order_id": 812.0})))) == RIGHT_CALL


def test_11_true_is_not_1_and_false_is_not_0():
    expected = {"type": "api_call", "name": "refund_order", "parameters": {"order_id": 1, "reason": False}}
    r = via_http(tool_message(("refund_order", {"order_id": True, "reason": 0})), expected=expected)
    assert flags(r) == WRONG_PARAMS
    assert r["reason"] == ("parameters of refund_order: order_id: expected 1 (number), got true (boolean); "
                           "reason: expected false (boolean), got 0 (number)")


def test_12_an_expected_null_string_is_not_an_absent_parameter():
    expected = {"type": "api_call", "name": "refund_order", "parameters": {"order_id": 812, "reason": "null"}}
    r = via_http(tool_message(("refund_order", {"order_id": 812})), expected=expected)
    assert flags(r) == WRONG_PARAMS and r["reason"].endswith("missing reason")


def test_13_a_predicted_null_is_an_extra_parameter_under_exact_only():
    action = {"type": "api_call", "name": "get_order_details", "parameters": {"order_id": 812, "note": None}}
    assert not C.params_match(CALL["parameters"], action["parameters"])
    assert C.params_match(CALL["parameters"], action["parameters"], C.LENIENT)
    assert flags(via_http(tool_message(("get_order_details", action["parameters"])))) == WRONG_PARAMS


# --------------------------------------------------------------------------- shapes and kinds


def test_14_two_tool_calls_score_the_first_and_say_so():
    r = via_http(tool_message(("get_order_details", {"order_id": 812}), ("refund_order", {"order_id": 812})))
    assert flags(r) == RIGHT_CALL
    assert r["reason"] == "the agent made 2 calls at once; the first is scored (refund_order not scored)"


def test_15_json_in_content_is_the_call_it_spells():
    r = via_http({"role": "assistant", "content": json.dumps({"type": "get_order_details",
                                                             "parameters": {"order_id": 812}})})
    assert flags(r) == RIGHT_CALL and r["predicted_type"] == "api_call"


def test_16_a_reply_where_a_call_was_expected():
    r = via_http({"role": "assistant", "content": "Let me check that for you."})
    assert flags(r) == NO_CALL and r["reason"] == "a reply where a call to get_order_details was expected"


def test_17_a_close_reply_is_correct_and_a_far_one_is_not():
    close = via_http({"type": "reply", "content": "Could you give me your order id, please?"}, expected=REPLY)
    assert flags(close) == (True, True, False, False, False, True)
    far = via_http({"type": "reply", "content": "The weather is nice today."}, expected=REPLY)
    assert flags(far) == (True, False, False, False, False, False) and far["reason"].startswith("reply similarity 0.")


@pytest.mark.django_db
def test_18_fenced_json_with_prose_and_python_literals_on_the_json_prompt(fake_openai, openai_settings):
    for text in ('Sure.\n```json\n{"type": "get_order_details", "parameters": {"order_id": 812}}\n```',
                 "{'type': 'get_order_details', 'parameters': {'order_id': 812}}"):
        fake_openai.set_handler(lambda b, n, text=text: Reply(content=text))
        assert outcome_flags(via_llm(AgentMode.PROMPT)) == RIGHT_CALL


@pytest.mark.django_db
def test_19_plain_text_is_unreadable_for_the_json_prompt_and_a_reply_for_function_calling(fake_openai,
                                                                                          openai_settings):
    fake_openai.set_handler(lambda b, n: Reply(content="Could you give me your order id?"))
    prompt = via_llm(AgentMode.PROMPT, expected=REPLY)
    assert outcome_flags(prompt) == NO_CALL and prompt.predicted_type == "invalid"
    assert prompt.reason.startswith("the answer is not a JSON object")
    assert outcome_flags(via_llm(AgentMode.FUNCTIONS, expected=REPLY)) == (True, True, False, False, False, True)


# --------------------------------------------------------------------------- no answer, bad answers


def test_20_http_500_is_no_answer():
    r = via_http((500, b'{"error": "boom"}', 0.0))
    assert flags(r) == NO_CALL and r["predicted_type"] == "failed" and r["reason"].startswith("HTTP 500")


def test_21_garbage_is_an_unreadable_answer():
    r = via_http((200, b"<html>Internal error</html>", 0.0))
    assert flags(r) == NO_CALL and r["predicted_type"] == "invalid"
    assert r["reason"].startswith("the response is not valid JSON")


def test_22_a_timeout_is_no_answer():
    r = via_http((200, json.dumps(CALL).encode(), 1.0), timeout=0.2)
    assert flags(r) == NO_CALL and r["predicted_type"] == "failed" and r["reason"] == "no answer within 0.2 s"


def test_23_a_dead_port_is_no_answer():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    action = HttpAgent(url=f"http://127.0.0.1:{port}/", retries=0).ask(data(CALL)).action
    r = core.record_for(data(CALL), action, threshold=0.55)
    assert flags(r) == NO_CALL and r["predicted_type"] == "failed" and r["reason"].startswith("connection failed")


def test_24_arguments_that_are_not_json_are_unreadable():
    r = via_http({"role": "assistant", "tool_calls": [{"function": {"name": "get_order_details",
                                                                    "arguments": "{order_id: 812"}}]})
    assert flags(r) == NO_CALL and r["predicted_type"] == "invalid" and "not valid JSON" in r["reason"]


def test_25_a_reply_without_text_is_unreadable():
    r = via_http({"type": "reply", "content": "  "}, expected=REPLY)
    assert flags(r) == (False,) * 6 and r["predicted_type"] == "invalid"

"""The session evaluation tests' shared script: a release of two conversations (a late order
refunded, an order cancelled) and the fake OpenAI endpoint playing the simulated user, the agent
under test and the judge, by script."""
from __future__ import annotations

import json

import pytest

from curation.models import Release, ReleaseTest
from evaluation import sessions as SS
from tests.evaluation.conftest import APIS
from tests.fake_openai import Reply

LATE = [  # conversation 1: look the order up, then refund it
    {"role": "user", "content": "Hi, my order has not arrived."},
    {"role": "assistant", "content": "Can you give me your order ID?"},
    {"role": "user", "content": "It is 812."},
    {"role": "api", "content": "get_order_details(order_id=812)"},
    {"role": "api_output", "content": '{"status": "lost"}'},
    {"role": "assistant", "content": "Your order was lost. Shall I refund it?"},
    {"role": "user", "content": "Yes please."},
    {"role": "api", "content": "refund_order(order_id=812, reason='lost')"},
    {"role": "api_output", "content": '{"refunded": true}'},
    {"role": "assistant", "content": "Your order has been refunded."},
]
CANCEL = [  # conversation 2: cancel straight away
    {"role": "user", "content": "Please cancel order 55."},
    {"role": "api", "content": "cancel_order(order_id=55)"},
    {"role": "api_output", "content": '{"cancelled": true}'},
    {"role": "assistant", "content": "Order 55 is cancelled."},
]
INTENTS = {1: {"name": "late order", "issue": "The customer's order is late."},
           2: {"name": "cancel order", "issue": "The customer wants to cancel an order."}}


def expected_of(msg: dict) -> dict:
    if msg["role"] == "assistant":
        return {"type": "reply", "content": msg["content"]}
    from generation.pipeline.extract import parse_api_call

    name, params = parse_api_call(msg["content"])
    return {"type": "api_call", "name": name, "parameters": params}


def rows_of(conv: int, messages: list[dict]) -> list[dict]:
    """The release rows of one conversation, cut before every agent action as the pipeline does."""
    rows = []
    for i, msg in enumerate(messages):
        if msg["role"] in ("assistant", "api") and messages[i - 1]["role"] in ("user", "api_output"):
            rows.append({"test_id": conv * 100 + i, "conversation_id": conv, "position": i, "intent": INTENTS[conv],
                         "procedure": "Look the order up, then refund or cancel it as the customer asks.",
                         "apis": APIS, "context": messages[:i], "expected": expected_of(msg), "noise_kinds": []})
    return rows


def make_release() -> Release:
    release = Release.objects.create(name="sessions", version=1, content_hash="0" * 64, manifest={})
    for conv, messages in ((1, LATE), (2, CANCEL)):
        for d in rows_of(conv, messages):
            ReleaseTest.objects.create(release=release, test_id=d["test_id"], conversation_id=conv,
                                       position=d["position"], data=d)
    return release


USER_SCRIPT = {"late": ["Hi, my order has not arrived.", "It is 812.", "Yes please."],
               "cancel": ["Please cancel order 55."]}


def conversation_lines(body: dict) -> list[str]:
    text = body["messages"][-1]["content"]
    return text.split("<conversation>\n", 1)[1].split("\n</conversation>", 1)[0].split("\n")


def scripted(judge_replies: dict[str, list[str]] | None = None):
    """The fake endpoint as all three parties; `judge_replies` per case, consumed in order."""
    judge_replies = judge_replies or {
        "late": ["Result: yes\nTotal number of goals: 3\nNumber of accomplished goals: 3\nReason: all done."],
        "cancel": ["I think it went fine.",  # malformed: discarded, the judge is asked again
                   "Result: no\nTotal number of goals: 2\nNumber of accomplished goals: 1\nReason: wrong order id."]}
    judged = {"late": 0, "cancel": 0}

    def handler(body: dict, n: int) -> Reply:
        system = body["messages"][0]["content"]
        if SS.JUDGE_MARKER in system:
            case = "late" if "order is late" in body["messages"][-1]["content"] else "cancel"
            reply = judge_replies[case][min(judged[case], len(judge_replies[case]) - 1)]
            judged[case] += 1
            return Reply(content=reply)
        if SS.USER_MARKER in system:
            case = "late" if "order is late" in system else "cancel"
            said = sum(1 for line in conversation_lines(body) if line.startswith("customer:"))
            script = USER_SCRIPT[case]
            return Reply(content=script[said] if said < len(script) else "END")
        # the agent under test (A.8 JSON answers)
        lines = conversation_lines(body)
        last = lines[-1]
        if last == "user: Hi, my order has not arrived.":
            return Reply(content=json.dumps({"type": "reply", "parameters": {"content": "Your order ID, please?"}}))
        if last == "user: It is 812.":
            return Reply(content=json.dumps({"type": "get_order_details", "parameters": {"order_id": 812}}))
        if last.startswith("api_output:") and "lost" in last:
            return Reply(content=json.dumps({"type": "reply", "parameters": {"content": "It was lost. Refund?"}}))
        if last == "user: Yes please.":
            return Reply(content=json.dumps({"type": "refund_order", "parameters": {"order_id": "812", "reason": "LOST "}}))
        if last.startswith("api_output:") and "refunded" in last:
            return Reply(content=json.dumps({"type": "reply", "parameters": {"content": "Refunded."}}))
        if last == "user: Please cancel order 55.":
            return Reply(content=json.dumps({"type": "cancel_order", "parameters": {"order_id": 56}}))  # wrong id
        if last.startswith("api_output:") and "error" in last:
            return Reply(content="Hmm, I could not find that order.")  # not JSON: unparseable, noted
        return Reply(content=json.dumps({"type": "reply", "parameters": {"content": "Anything else?"}}))

    return handler


@pytest.fixture
def release(db) -> Release:
    return make_release()

"""A small hand-made release and scripted agent answers whose metrics were computed by hand.

Every context's last user message carries a marker "[tN]" so the fake endpoint knows which test
it is answering. The expected values (see EXPECTED) are worked out in the comments of SCRIPT.
"""
from __future__ import annotations

import json
import re

import pytest

from curation.models import Release, ReleaseTest
from tests.fake_openai import FakeOpenAI, Reply, point_settings_at  # noqa: F401 - fixtures below

APIS = [
    {"name": "get_order_details", "desc": "Look an order up", "params": [{"name": "order_id", "type": "int", "required": True}],
     "output": {"name": "order", "type": "dict"}},
    {"name": "refund_order", "desc": "Refund an order",
     "params": [{"name": "order_id", "type": "int", "required": True}, {"name": "reason", "type": "str", "required": True}],
     "output": {"name": "refunded", "type": "bool"}},
    {"name": "cancel_order", "desc": "Cancel an order", "params": [{"name": "order_id", "type": "int", "required": True}],
     "output": {"name": "cancelled", "type": "bool"}},
]

FLOWGRAPH = {
    "kind": "flowgraph",
    "nodes": [
        {"id": "N0", "type": "start_message", "label": "Greet the customer"},
        {"id": "N1", "type": "message", "label": "Ask for the order id"},
        {"id": "N2", "type": "api", "label": "get_order_details"},
        {"id": "N3", "type": "end_message", "label": "Order found"},
    ],
    "edges": [
        {"id": "E0", "source": "N0", "target": "N1", "label": "Order problem"},
        {"id": "E1", "source": "N1", "target": "N2", "label": "Gives order id"},
        {"id": "E2", "source": "N2", "target": "N3", "label": "Found"},
    ],
}

PROCEDURE = "Ask for the order id, look the order up, then refund or cancel it as the customer asks."


def reply(text: str) -> dict:
    return {"type": "reply", "content": text}


def call(name: str, **params) -> dict:
    return {"type": "api_call", "name": name, "parameters": params}


# (test id, conversation, position, expected, noise kinds)
TESTS = [
    (1, 101, 1, reply("Can you give me your order ID?"), []),
    (2, 101, 3, call("get_order_details", order_id=812), []),
    (3, 101, 5, reply("Your order has been refunded."), []),
    (4, 102, 1, call("get_order_details", order_id=900), []),
    (5, 102, 3, call("refund_order", order_id=900, reason="damaged"), []),
    (6, 102, 5, reply("Anything else I can help you with?"), []),
    (7, 103, 1, reply("I can only help with your order."), ["out_of_procedure"]),
    (8, 103, 3, call("cancel_order", order_id=55), ["out_of_procedure"]),
    (9, 103, 5, call("get_order_details", order_id=55), ["out_of_procedure"]),
    (10, 104, 1, reply("Goodbye!"), []),
]

# What the scripted agent answers (prompt mode), per test:
SCRIPT = {
    1: json.dumps({"type": "reply", "parameters": {"content": "Can you give me your order ID?"}}),  # reply ok
    2: json.dumps({"type": "get_order_details", "parameters": {"order_id": 812}}),  # correct (typed: 812, a number)
    3: json.dumps({"type": "refund_order", "parameters": {"order_id": 812}}),  # reply expected, API called
    4: json.dumps({"type": "reply", "parameters": {"content": "What is your order number?"}}),  # API not recalled
    # right API; "  Damaged " is not "damaged" (exact comparison), equal under the lenient one
    5: "```json\n" + json.dumps({"type": "refund_order", "parameters": {"order_id": 900, "reason": "  Damaged "}}) + "\n```",
    6: json.dumps({"type": "reply", "parameters": {"content": "The weather is nice today."}}),  # recalled, wrong text
    7: "I think I should greet the customer first.",  # not JSON: invalid, wrong with a reason
    8: "{'type': 'cancel_order', 'parameters': {'order_id': 56}}",  # right API, wrong value
    9: json.dumps({"type": "cancel_order", "parameters": {"order_id": 55}}),  # wrong API
    10: json.dumps({"type": "reply", "parameters": {"content": "Goodbye!"}}),  # reply ok
}

# Worked out by hand from TESTS and SCRIPT:
# replies expected: t1 t3 t6 t7 t10 = 5; the agent replied on t1 t6 t10 -> reply recall 3/5
# correct reply among those: t1 t10 (t6 is unrelated text) -> 2/3
# API calls expected: t2 t4 t5 t8 t9 = 5; called an API on t2 t5 t8 t9 -> API recall 4/5
# ("812" for 812 would be wrong under the exact comparison: tests/evaluation/test_hand_cases.py)
# right name among those: t2 t5 t8 -> 3/4; right parameters among those: t2 only (exact) -> 1/3
# fully correct tests: t1 t2 t10 -> 3/10
# conversations: 101 (t3 wrong), 102 (t4, t5, t6 wrong), 103 (all wrong), 104 (t10 ok) -> 1/4
EXPECTED = {
    "reply_recall": (3, 5), "reply_correct": (2, 3), "api_recall": (4, 5), "api_correct": (3, 4),
    "params_correct": (1, 3), "test_correct": (3, 10), "conversation_correct": (1, 4),
}
# With the lenient comparison t5's " Damaged " equals "damaged": parameters 2/3, tests 4/10.
EXPECTED_LENIENT = {**EXPECTED, "params_correct": (2, 3), "test_correct": (4, 10)}


def context_for(test_id: int, conv: int, position: int) -> list[dict]:
    msgs = []
    for i in range(position):
        if i % 2 == 0:
            msgs.append({"role": "user", "content": f"Message {i} of conversation {conv} [t{test_id - (position - 1 - i) // 2}]"})
        else:
            msgs.append({"role": "assistant", "content": "Earlier agent turn."})
    # The last message before the cut names this test.
    msgs[-1] = {"role": "user", "content": f"My order is late [t{test_id}]"}
    return msgs


def make_release(name: str = "hand-made", version: int = 1, kind: str = "curated", tests=TESTS) -> Release:
    release = Release.objects.create(name=name, version=version, kind=kind, content_hash="0" * 64, manifest={})
    for test_id, conv, pos, expected, noise in tests:
        ReleaseTest.objects.create(release=release, test_id=test_id, conversation_id=conv, position=pos, data={
            "test_id": test_id, "conversation_id": conv, "position": pos, "intent": "late order",
            "procedure": PROCEDURE, "apis": APIS, "context": context_for(test_id, conv, pos),
            "expected": expected, "noise_kinds": noise, "path": ["N0", "N1"], "flowgraph_id": 1,
            "flowgraph": FLOWGRAPH,
        })
    return release


@pytest.fixture
def small_release(db) -> Release:
    return make_release()


_MARK = re.compile(r"\[t(\d+)\]")


def which_test(body: dict) -> int:
    user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    return int(_MARK.findall(user)[-1])


def scripted_agent(body: dict, n: int) -> Reply:
    return Reply(content=SCRIPT[which_test(body)])

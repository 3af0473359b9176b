"""docs/agent-protocol.md's JSON Schemas hold: every request body we send validates, every
response shape we read validates, and what the schema rejects the reader counts wrong."""
from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from evaluation.protocol import request_body
from evaluation.reader import read_object as read_answer
from tests.evaluation.conftest import FLOWGRAPH
from tests.evaluation.http_agents import HTTP_SCRIPT, release_rows, tool_call

DOC = Path(__file__).resolve().parents[2] / "docs" / "agent-protocol.md"


def schema(name: str) -> dict:
    text = DOC.read_text(encoding="utf-8")
    block = re.search(rf"<!-- schema: {name} -->\s*```json\n(.*?)```", text, re.S)
    assert block, f"no {name} schema in {DOC}"
    s = json.loads(block.group(1))
    jsonschema.Draft202012Validator.check_schema(s)
    return s


def test_every_request_body_validates():
    validator = jsonschema.Draft202012Validator(schema("request"))
    rows = release_rows()
    rows[0]["context"] = [{"role": "user", "content": "812"}, {"role": "api", "content": "get_order_details(order_id=812)"},
                          {"role": "api_output", "content": '{"order": 1}'}, {"role": "assistant", "content": "Found."},
                          {"role": "api", "content": "not a call at all"}, {"role": "api_output", "content": "{}"}]
    for row in rows:
        for knowledge in ("procedure", "mermaid", "code", "none"):
            body = request_body({**row, "flowgraph": FLOWGRAPH}, knowledge=knowledge, release="r@1")
            errors = [e.message for e in validator.iter_errors(body)]
            assert not errors, errors
    # the example in the document validates too
    example = json.loads(re.search(r"### Request\s*```json\n(.*?)```", DOC.read_text(), re.S).group(1))
    validator.validate(example)


def test_every_accepted_response_shape_validates_and_is_read():
    validator = jsonschema.Draft202012Validator(schema("response"))
    for t, (status, body, _delay) in HTTP_SCRIPT.items():
        if t == 7:
            continue  # not JSON on purpose
        obj = json.loads(body)
        validator.validate(obj)
        assert read_answer(obj, ["get_order_details", "refund_order", "cancel_order"])["type"] in ("reply", "api_call")


@pytest.mark.parametrize("obj", [
    {"type": "reply", "content": ""},
    {"type": "api_call"},
    {"role": "assistant"},
    {"choices": []},
    [1, 2],
])
def test_what_the_schema_rejects_is_counted_wrong(obj):
    assert not jsonschema.Draft202012Validator(schema("response")).is_valid(obj)
    assert read_answer(obj, ["get_order_details"])["type"] == "invalid"


def test_a_call_to_an_unknown_tool_is_a_call_to_a_wrong_api():
    obj = tool_call("delete_everything", {})
    jsonschema.Draft202012Validator(schema("response")).validate(obj)
    action = read_answer(obj, ["get_order_details"])
    assert action["type"] == "api_call" and action["name"] == "delete_everything"
    assert "not one of the APIs offered" in action["note"]


def test_the_untagged_call_is_in_the_schema_and_read():
    validator = jsonschema.Draft202012Validator(schema("response"))
    untagged = {"name": "get_order_details", "arguments": {"order_id": 812}}
    tagged = {"type": "api_call", "name": "get_order_details", "arguments": {"order_id": 812}}
    validator.validate(untagged)
    validator.validate(tagged)  # one branch of oneOf, not two
    for obj in (untagged, tagged):
        assert read_answer(obj, ["get_order_details"]) == {"type": "api_call", "name": "get_order_details",
                                                           "parameters": {"order_id": 812}}

import json

import pytest

from generation.pipeline.apis import ApiFormatError, ApiSpec, ParamSpec, api_to_dict, parse_api_list, parse_api_text

from .conftest import fixture_text


def test_paper_shapes():
    apis = parse_api_list(json.loads(fixture_text("a6_apis.json")))
    assert apis == [ApiSpec("get_order_details", "", [ParamSpec("order_id", "int")],
                            "sent_status", "list[dict[str, str]]")]
    (a,) = parse_api_list({"apis": [{"name": "refund", "desc": "d", "params": [{"name": "order_id"}],
                                     "output": "bool"}]})
    assert (a.params[0].type, a.output_name, a.output_type) == ("str", "result", "bool")


def test_round_trip_through_dict():
    api = ApiSpec("find", "Find it", [ParamSpec("q", "int", False, "query")], "hits", "list[str]")
    assert ApiSpec.from_dict(api_to_dict(api)) == api


def test_openai_tools_and_flowbench_json_and_text():
    tools = [{"type": "function", "function": {"name": "lookup", "description": "x", "parameters": {
        "type": "object", "properties": {"user_id": {"type": "string"}, "n": {"type": "integer"},
                                          "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["user_id"]}}}]
    (a,) = parse_api_list(tools)
    assert [(p.name, p.type, p.required) for p in a.params] == [
        ("user_id", "str", True), ("n", "int", False), ("tags", "list[str]", False)]
    fb = [{"name": "checkSeat", "description": "d", "input_parameters": {
        "code": {"type": "string", "required": True}, "when": {"type": "string", "required": False}}}]
    assert [p.required for p in parse_api_list(fb)[0].params] == [True, False]
    text = 'API: checkSeat\nAPI Desciption: Check it\nInput parameters: {"code": {"type": "string", "required": true}}\nOutput parameters: {}\n'
    (t,) = parse_api_text(text)
    assert (t.name, t.description, t.params[0].name) == ("checkSeat", "Check it", "code")


@pytest.mark.parametrize("data, message", [
    ({"apis": [{"name": "ok"}, {"desc": "no name"}]}, "API 2: key 'name'"),
    ({"apis": [{"name": "a", "params": [{"x": 1, "y": 2}]}]}, r"API 1: key 'params\[0\]'"),
    ({"apis": "nope"}, "key 'apis' must be a list"),
    ([{"name": "a"}, {"name": "a"}], "API 2: key 'name' repeats"),
])
def test_errors_name_item_and_field(data, message):
    with pytest.raises(ApiFormatError, match=message):
        parse_api_list(data)


def test_real_tool_files(shared_data):
    for path in sorted(shared_data.glob("tau_bench/*/tools.json")) + [shared_data / "tau2_bench/telecom/tools.json"]:
        apis = parse_api_list(json.loads(path.read_text()))
        assert apis and all(a.name for a in apis)
    star = parse_api_list(json.loads((shared_data / "star/apis/apis/bank_balance.json").read_text()))
    assert star[0].name == "bank_balance" and "PIN" in [p.name for p in star[0].params]

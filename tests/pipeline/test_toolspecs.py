"""OpenAPI 3.0 (YAML) and 3.1 (JSON) documents with $refs, and an MCP tools/list result."""
from __future__ import annotations

from pathlib import Path

import pytest

from generation.pipeline.apis import ApiFormatError, parse_api_list
from generation.pipeline.cli import load_apis
from generation.pipeline.schema import schema_type
from generation.pipeline.toolspecs import load_structured

TOOLS = Path(__file__).parent / "fixtures" / "tools"


def _by_name(path: str):
    return {a.name: a for a in load_apis(TOOLS / path)}


def test_openapi_30_yaml_operations_parameters_body_and_response_with_refs():
    apis = _by_name("shop-3.0.yaml")
    assert set(apis) == {"getOrder", "placeOrder"}
    get = apis["getOrder"]
    # path parameter from a $ref at path level (required), query parameter, header parameter left out
    assert [(p.name, p.type, p.required) for p in get.params] == [("order_id", "int", True),
                                                                 ("include_items", "bool", False)]
    assert get.param("order_id").description == "The order number"
    assert get.param("include_items").default is False
    outs = {p.name: p for p in get.outputs}
    assert outs["status"].enum == ["open", "packed", "shipped"]
    assert outs["total"].type == "float" and outs["tags"].type == "dict[str, str]"
    assert outs["lines"].type == "list[dict]" and [q.name for q in outs["lines"].properties] == ["sku", "quantity"]
    place = apis["placeOrder"]
    assert [(p.name, p.type, p.required) for p in place.params] == [
        ("email", "str", True), ("items", "list[dict]", True), ("note", "Optional[str]", False)]
    assert place.param("email").format == "email"


def test_openapi_31_json_type_arrays_and_recursive_refs():
    apis = _by_name("rooms-3.1.json")
    search = apis["searchRooms"]
    assert search.param("guests").type == "Optional[int]" and not search.param("guests").required
    outs = {p.name: p for p in search.outputs}
    assert outs["found"].type == "bool"
    room = {q.name: q for q in outs["rooms"].properties}
    assert room["hotel_name"].type == "str" and room["parent"].type == "dict"  # the cycle is cut, not looped


def test_mcp_tools_list_result_with_defs():
    apis = _by_name("mcp-tools-list.json")
    fc = apis["get_forecast"]
    assert [(p.name, p.type, p.required) for p in fc.params] == [
        ("place", "str", True), ("days", "int", False), ("units", "str", False)]
    assert fc.param("units").enum == ["metric", "imperial"]
    assert [(p.name, p.type) for p in fc.outputs] == [("summary", "str"), ("highs", "list[float]")]
    assert apis["list_alerts"].param("region").type == "Optional[str]" and apis["list_alerts"].outputs == []


@pytest.mark.parametrize("schema, expected", [
    ({"type": "string"}, "str"), ({"type": "integer"}, "int"), ({"type": "number"}, "float"),
    ({"type": "boolean"}, "bool"), ({"type": "array", "items": {"type": "integer"}}, "list[int]"),
    ({"type": "object", "additionalProperties": {"type": "number"}}, "dict[str, float]"),
    ({"type": ["string", "null"]}, "Optional[str]"), ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "Optional[int]"),
    ({"type": "string", "nullable": True}, "Optional[str]"), ({"type": "object", "properties": {"a": {}}}, "dict"),
])
def test_json_schema_types_map_to_the_papers_type_strings(schema, expected):
    assert schema_type(schema) == expected


def test_bad_documents_say_where():
    with pytest.raises(ApiFormatError, match=r"line 2, column \d+: invalid YAML"):
        load_structured("openapi: 3.0.0\npaths: {a: [\n", "x.yaml")
    with pytest.raises(ApiFormatError, match=r"^GET /a \(get_a\): \$ref '#/nope' at #/paths/~1a/get/parameters/0 "
                                             "does not resolve$"):
        parse_api_list({"openapi": "3.1.0", "paths": {"/a": {"get": {"parameters": [{"$ref": "#/nope"}]}}}})
    with pytest.raises(ApiFormatError, match="declares no operation"):
        parse_api_list({"openapi": "3.1.0", "paths": {}})


def test_hand_written_type_words_and_required_strings():
    (api,) = parse_api_list([{"api_name": "x", "input_parameters": {
        "a": {"type": "Enum", "description": "Enumeration type, [p, q]", "required": "false"},
        "b": {"type": "Long", "required": "true"}, "c": {"type": "JSON"}}}])
    assert [(p.name, p.type, p.required) for p in api.params] == [("a", "str", False), ("b", "int", True),
                                                                 ("c", "dict", True)]

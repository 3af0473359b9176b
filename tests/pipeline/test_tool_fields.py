"""Tool specifications without silent losses: OpenAPI 3.0 (YAML) and 3.1 (JSON), MCP and OpenAI tools
documents written for these tests, and a 288-operation synthetic document.

The independent check is :mod:`tests.pipeline.field_audit`: a plain reading of every field each
operation declares; every one must be kept or named in the import's report.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from generation.pipeline.apis import MESSAGE_LIMIT, ApiFormatError, parse_api_list
from generation.pipeline.cli import load_apis
from generation.pipeline.toolspecs.openapi import field_paths
from generation.pipeline.toolspecs.documents import load_structured
from generation.pipeline.synth_openapi import openapi_document

from .field_audit import declared, silent_drops

TOOLS = Path(__file__).parent / "fixtures" / "tools"


def _apis(name: str):
    apis = load_apis(TOOLS / name)
    return {a.name: a for a in apis}, apis.report


@pytest.mark.parametrize("name", ["bakery-3.1.json", "bakery-3.0.yaml"])
def test_every_declared_field_is_kept_or_reported(name):
    doc = load_structured((TOOLS / name).read_text())
    apis = parse_api_list(doc)
    assert len(apis) == len(declared(doc)) and silent_drops(doc, apis, apis.report) == []


def test_the_audit_notices_a_silent_drop():
    doc = load_structured((TOOLS / "bakery-3.1.json").read_text())
    apis = parse_api_list(doc)
    quiet = [line for line in apis.report if "X-Request-Id" not in line]
    assert sorted(silent_drops(doc, apis, quiet)) == ["createOrder: input X-Request-Id",
                                                      "listOrders: input X-Request-Id"]
    apis[0].outputs[0].properties.pop()  # listOrders' output loses lines.price
    assert any("listOrders: output lines.price" in m for m in silent_drops(doc, apis, apis.report))


def test_288_operations_without_a_silent_drop():
    doc = openapi_document(288, seed=28)
    apis = parse_api_list(doc)
    assert len(apis) == 288 and silent_drops(doc, apis, apis.report) == []
    assert any("webhook(s) not read" in line for line in apis.report)


def test_allof_is_merged_and_unions_keep_their_members_fields():
    apis, _ = _apis("bakery-3.1.json")
    create = apis["createOrder"]
    customer = create.param("customer")
    assert customer.type == "Union[dict, str]" and customer.required
    assert [f.name for f in customer.properties] == ["name", "email", "company", "vat"]
    assert not any(f.required for f in customer.properties)  # no field is required by every member
    assert [(v["name"], v["type"], v["fields"]) for v in customer.variants] == [
        ("Person", "dict", ["name", "email"]), ("Company", "dict", ["company", "vat"]), ("option 3", "str", [])]
    # Order = allOf [NewOrder, {id, status, total}, {notes}]: every member's fields, one list.
    out = {o.name: o for o in apis["listOrders"].outputs}
    assert {"lines", "customer", "delivery", "id", "status", "total", "notes"} <= set(out)
    assert apis["listOrders"].output_type == "list[dict]"  # an array response keeps its items' fields
    assert [f.name for f in out["notes"].properties] == ["author", "text"]
    assert out["total"].type == "dict" and [f.name for f in out["total"].properties] == ["amount", "currency"]


def test_a_type_beside_anyof_and_type_lists_are_kept():
    apis, _ = _apis("bakery-3.1.json")
    assert apis["searchCatalogue"].param("q").type == "str"  # type: string beside anyOf [minLength, format]
    assert apis["listOrders"].param("status").type == "Optional[str]"
    out = {o.name: o for o in apis["searchCatalogue"].outputs}
    assert out["next"].type == "Optional[str]" and out["by_shop"].type == "dict[str, dict]"
    assert [f.name for f in out["by_shop"].properties] == ["count", "open_now"]
    assert [f.name for f in out["items"].properties] == ["kind", "flour", "weight_g", "layers", "topping"]
    tools, report = _apis("openai-tools-unions.json")
    assert tools["send_parcel"].param("speed").type == "str" and report == []
    assert [f.name for f in tools["send_parcel"].param("to").properties] == ["street", "city", "postcode"]


def test_form_and_multipart_bodies_are_read_like_json():
    apis, report = _apis("bakery-3.0.yaml")
    create = apis["createOrder"]  # form-urlencoded (preferred over multipart), allOf with a coupon
    assert field_paths(create.params) == ["lines", "lines.sku", "lines.quantity", "customer", "customer.name",
                                          "customer.email", "customer.company", "customer.vat", "pickup_on", "coupon"]
    assert create.param("coupon").type == "Optional[str]"
    photo, report31 = _apis("bakery-3.1.json")
    assert [(p.name, p.type, p.required) for p in photo["addPhoto"].params] == [
        ("order_id", "int", True), ("caption", "str", False), ("file", "str", True), ("body_caption", "str", False),
        ("crop", "dict", False)]
    assert photo["addPhoto"].param("file").format == "binary"
    assert "addPhoto: body field caption: has the name of a parameter; kept as body_caption" in report31
    assert ("createOrder: request body application/x-www-form-urlencoded: fields coupon are only in this media "
            "type; the body is read from application/json") in report31


def test_what_is_left_out_is_reported_with_its_reason():
    _, report = _apis("bakery-3.1.json")
    text = "\n".join(report)
    for expected in ["listOrders: header parameter X-Request-Id: left out",
                     "listOrders: cookie parameter session: left out",
                     "listOrders: parameter 3 (#/paths/~1orders/get/parameters/2): has no name; left out",
                     "createOrder: id: left out: readOnly",
                     "addPhoto: output.secret_token: left out: writeOnly",
                     "createOrder: response 202: output fields queue_position are not kept",
                     "createOrder: 1 callback(s) not read",
                     "searchCatalogue: output.category.parent: #/components/schemas/Category contains itself",
                     "1 webhook(s) not read", "2 other response(s) (3xx, 4xx, 5xx, default)"]:
        assert expected in text, expected


def test_yaml_is_recognised_by_parsing_and_dates_stay_text():
    text = (TOOLS / "bakery-3.0.yaml").read_text()
    assert not text.startswith("openapi")
    doc = load_structured(text)
    assert doc["openapi"] == "3.0.3" and doc["paths"]["/orders"]["get"]["parameters"][1]["schema"]["example"] == "2031-05-03"
    json.dumps(doc)  # everything read can be written as JSON
    with pytest.raises(ApiFormatError, match="not a JSON or YAML document"):
        load_structured("just a sentence")


def test_the_alias_bomb_is_refused_before_it_is_expanded():
    bomb = (TOOLS / "alias-bomb.yaml").read_bytes()
    assert len(bomb) == 551
    with pytest.raises(ApiFormatError, match=r"line \d+, column \d+: the YAML aliases expand to more than"):
        load_structured(bomb.decode())
    with pytest.raises(ApiFormatError, match="contains it"):
        load_structured("a: &x [1, *x]\n")
    assert load_structured("base: &b {x: 1}\nmore:\n  <<: *b\n  y: 2\n")["more"] == {"x": 1, "y": 2}


def _doc(paths=None, **extra):
    doc = {"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, **extra}
    if paths is not None:
        doc["paths"] = paths
    return doc


OK = {"responses": {"200": {"description": "ok"}}}


@pytest.mark.parametrize("doc, message", [
    (_doc(webhooks={"a": {"post": OK}, "b": {"post": OK}}),
     "the OpenAPI document declares no operation: it has no 'paths' and only 2 webhook(s)"),
    (_doc(), "the OpenAPI document declares no operation: it has no 'paths'"),
    (_doc({}), "the OpenAPI document declares no operation: it has an empty 'paths'"),
    ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}},
     "the document is a JSON-RPC error response (code -32601: Method not found), not a tools/list result"),
    ({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}, "the tools/list result lists no tool"),
    ({"swagger": "2.0", "paths": {}}, "a Swagger 2.0 document"),
    (_doc({"/a": {"get": {**OK, "operationId": "same"}}, "/b": {"post": {**OK, "operationId": "same"}}}),
     "operationId 'same' is used twice: by GET /a and by POST /b (#/paths/~1b/post/operationId)"),
])
def test_documents_without_operations_and_duplicates_are_refused_with_their_own_message(doc, message):
    with pytest.raises(ApiFormatError) as exc:
        parse_api_list(doc)
    assert str(exc.value).startswith(message)


def test_a_dangling_ref_in_a_large_document_names_the_operation_and_the_pointer_in_one_short_line():
    doc = openapi_document(600, seed=3, description_words=40)
    assert len(json.dumps(doc)) > 1_000_000
    doc["paths"]["/things77/{id_77}"]["post"]["requestBody"]["content"]["application/json"]["schema"] = {
        "$ref": "#/components/schemas/Gone"}
    with pytest.raises(ApiFormatError) as exc:
        parse_api_list(doc)
    msg = str(exc.value)
    assert msg == ("POST /things77/{id_77} (postThing77): $ref '#/components/schemas/Gone' at "
                   "#/paths/~1things77~1{id_77}/post/requestBody/content/application~1json/schema does not resolve")
    assert len(msg) <= MESSAGE_LIMIT and "\n" not in msg


def test_messages_are_capped():
    assert len(str(ApiFormatError("x" * 100_000))) == MESSAGE_LIMIT


def test_the_commands_print_what_an_api_document_does_not_keep(tmp_path):
    import io

    from generation.pipeline.cli import convert_workflow_main, validate_graph_main

    chart = tmp_path / "orders.mmd"
    chart.write_text("flowchart TD\nA(Start) --> B[Ask for the shop and call listOrders] --> C[Read them out]\n")
    out, err = io.StringIO(), io.StringIO()
    assert convert_workflow_main(chart, "mermaid", "flowgraph", apis=TOOLS / "bakery-3.1.json", out=out, err=err) == 0
    assert "report: not kept: listOrders: header parameter X-Request-Id: left out" in err.getvalue()
    assert "(api){listOrders}" in out.getvalue()
    log = io.StringIO()
    validate_graph_main(chart, None, log, apis=TOOLS / "bakery-3.0.yaml")
    assert "report: not kept: createOrder: id: left out: readOnly" in log.getvalue()


def test_a_default_response_alone_is_the_output():
    doc = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/a": {"get": {
        "operationId": "getA", "responses": {"default": {"description": "the answer", "content": {
            "application/json": {"schema": {"type": "object", "properties": {"answer": {"type": "integer"}}}}}}}}}}}
    apis = parse_api_list(doc)
    assert [o.name for o in apis[0].outputs] == ["answer"]
    assert apis.report == ["getA: output: read from the 'default' response (no 2xx response describes a body)"]


def test_conditional_and_pattern_fields_are_kept_or_reported_and_external_refs_are_said():
    tools = [{"name": "t", "inputSchema": {"type": "object", "properties": {
        "a": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"x": {"type": "string"}}}],
              "oneOf": [{"type": "object", "properties": {"y": {"type": "integer"}}}]},
        "b": {"type": "object", "if": {"properties": {"k": {"const": 1}}},
              "then": {"properties": {"when_one": {"type": "string"}}}, "else": {"properties": {"other": {}}}},
        "c": {"type": "object", "patternProperties": {"^a": {"type": "object", "properties": {"p": {}}},
                                                      "^b": {"type": "string"}}},
        "d": {"type": "object", "dependentSchemas": {"card": {"properties": {"billing": {"type": "string"}}}}},
        "e": {"$ref": "common.yaml#/Address"}}}}]
    apis = parse_api_list(tools)
    assert field_paths(apis[0].params) == ["a", "a.y", "a.x", "b", "b.when_one", "b.other", "c", "d", "d.billing", "e"]
    assert apis.report == [
        "t: inputSchema.c: its keys matching '^a' follow a schema with fields p; those are not kept as named fields",
        "t: inputSchema.e: $ref 'common.yaml#/Address' points into another document; its fields are not read"]

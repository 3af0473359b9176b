"""The API graph from declared outputs only (issue #27 item 7): output schemas flattened with
list -> item and map fields, record states, and τ-bench's airline and retail tools against the
hand-labelled edge list in tests/pipeline/tau_bench_edges.py (precision and recall >= 0.95)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from generation.pipeline import api_graph as G
from generation.pipeline import output_schema as OS
from tests.pipeline.tau_bench_edges import EDGES, labelled

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "tau_bench"
OUTPUTS = Path(__file__).resolve().parent / "data"
needs_tau = pytest.mark.skipif(not DATA.exists(), reason="../shared/data/tau_bench is not here")


def tau(domain: str) -> list[G.ApiNode]:
    apis = G.load_apis(json.loads((DATA / domain / "tools.json").read_text()))
    return G.apply_output_schemas(apis, json.loads((OUTPUTS / f"tau_bench_{domain}_outputs.json").read_text()))


def test_schema_fields_list_items_maps_and_entity_ids():
    schema = {"type": "object", "properties": {
        "reservation_id": {"type": "string"},
        "flights": {"type": "array", "items": {"type": "object", "properties": {"flight_number": {"type": "string"}}}},
        "orders": {"type": "array", "items": {"type": "string", "title": "order_id"}},
        "payment_methods": {"type": "object", "propertyNames": {"title": "payment_method_id"},
                            "additionalProperties": {"type": "object", "properties": {"id": {"type": "string"}}}},
        "address": {"type": "object", "properties": {"zip": {"type": "string"}}}}}
    got = {(f.name, f.path, f.via) for f in OS.schema_fields(schema)}
    assert got == {
        ("reservation_id", "reservation_id", "field"),
        ("flights", "flights", "field"), ("flight_number", "flights[].flight_number", "list item"),
        ("flights", "flights[]", "list item"),  # one record of the list (fills an element of a list input)
        ("orders", "orders", "field"), ("order_id", "orders[]", "list item"),
        ("payment_methods", "payment_methods", "field"), ("payment_method_id", "payment_methods{payment_method_id}", "map key"),
        ("payment_methods", "payment_methods{}", "list item"), ("id", "payment_methods{}.id", "list item"), ("payment_method_id", "payment_methods{}.id", "list item"),
        ("address", "address", "field"), ("zip", "address.zip", "field")}


def test_no_name_is_made_up():
    assert OS.schema_fields({"type": "string"}) == []  # a bare value without a title
    assert [f.name for f in OS.schema_fields({"type": "string", "title": "user_id"})] == ["user_id"]
    # a list of lists of records (tau-bench's one-stop flights): the records' fields, as list items
    pairs = {"type": "array", "items": {"type": "array", "items": {"type": "object", "properties": {
        "date": {"type": "string"}}}}}
    assert [(f.name, f.path, f.via) for f in OS.schema_fields(pairs)] == [("date", "[][].date", "list item")]


def test_states_rule_out_edges_into_tools_that_need_another_state():
    order = {"type": "object", "properties": {"order_id": {"type": "string"}, "status": {"const": "cancelled"}}}
    assert OS.record_states(order) == {"cancelled"}
    assert OS.record_states({"type": "object", "properties": {"status": {"enum": ["a", "b"]}}}) == {"a", "b"}
    assert OS.record_states({"type": "object"}) is None
    assert not OS.accepted({"cancelled"}, {"status": ["pending"]}) and OS.accepted({"cancelled", "pending"},
                                                                                   {"status": ["pending"]})
    assert not OS.accepted({"cancelled"}, {"status_not": ["cancelled"]}) and OS.accepted(None, {"status": ["x"]})
    cancel = G.ApiNode("cancel_order", "", [G.Field("order_id", "string")], G.outputs_of_schema(order),
                       OS.record_states(order), {"order_id": {"status": ["pending"]}})
    get = G.ApiNode("get_order", "", [G.Field("order_id", "string")], G.outputs_of_schema(order), None)
    got = {(e.source, e.target) for e in G.build_graph([cancel, get])}
    assert got == {("cancel_order", "get_order"), ("get_order", "cancel_order")}  # get_order: any state
    cancel_twice = {(e.source, e.target) for e in G.build_graph([cancel, G.ApiNode(
        "cancel_again", "", [G.Field("order_id", "string")], [], None, {"order_id": {"status": ["pending"]}})])}
    assert cancel_twice == set()  # a cancelled order feeds no tool that needs a pending one


def test_a_list_of_records_feeds_an_input_its_items_hold():
    search = G.load_apis([{"name": "search_flights", "parameters": {"type": "object", "properties": {}},
                           "outputSchema": {"type": "array", "items": {"type": "object", "properties": {
                               "flight_number": {"type": "string"}}}}}])[0]
    book = G.load_apis([{"name": "book", "parameters": {"type": "object", "properties": {"flights": {
        "type": "array", "items": {"type": "object", "properties": {"flight_number": {"type": "string"}}}}}}}])[0]
    (edge,) = G.build_graph([search, book])
    assert (edge.source, edge.target) == ("search_flights", "book")
    assert edge.to_dict()["fields"][0] == {"output": "[].flight_number", "input": "flights[].flight_number",
                                           "score": edge.score, "how": "name", "via": "list item"}


def test_imported_schemas_are_checked():
    apis = G.load_apis([{"name": "a", "params": [], "output": {"name": "x", "type": "str"}}])
    bare, only_accepts = (G.apply_output_schemas(apis, {"a": schema})[0] for schema in (
        {"type": "string", "title": "y"}, {"accepts": {"x": {"status": ["open"]}}}))
    assert [f.name for f in bare.outputs] == ["y"]  # a bare schema is the output
    assert [f.name for f in only_accepts.outputs] == ["x"] and only_accepts.accepts == {"x": {"status": ["open"]}}
    with pytest.raises(G.ApiGraphInputError, match="not in the list: b"):
        G.apply_output_schemas(apis, {"b": {"returns": {"type": "string", "title": "x"}}})
    with pytest.raises(G.ApiGraphInputError, match="expected an object"):
        G.apply_output_schemas(apis, [])


def test_the_edge_list_is_well_formed():
    for domain, edges in EDGES.items():
        pairs = [(s, t) for s, t, _ in edges]
        assert len(pairs) == len(set(pairs)), domain  # no edge labelled twice
        assert all(s != t and why.strip() for s, t, why in edges)


@needs_tau
@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_tau_bench_edges_against_the_hand_labels(domain):
    apis = tau(domain)
    names = {a.name for a in apis}
    assert {n for pair in labelled(domain) for n in pair} <= names
    edges = G.build_graph(apis)
    predicted = {(e.source, e.target) for e in edges}
    tp = len(predicted & labelled(domain))
    precision, recall = tp / len(predicted), tp / len(labelled(domain))
    assert precision >= 0.95 and recall >= 0.95, (domain, precision, recall, sorted(predicted ^ labelled(domain)))
    # audit: every matched output is a field the source's imported schema declares
    schemas = json.loads((OUTPUTS / f"tau_bench_{domain}_outputs.json").read_text())
    for e in edges:
        declared = {f.path for f in OS.schema_fields(schemas[e.source]["returns"])}
        assert {m.output for m in e.matches} <= declared, (e.source, e.target)


@needs_tau
def test_the_issue_examples():
    airline = {(e.source, e.target): e for e in G.build_graph(tau("airline"))}
    retail = {(e.source, e.target): e for e in G.build_graph(tau("retail"))}
    # user records hold no user_id: no edge into send_certificate from the user record
    assert ("get_user_details", "send_certificate") not in airline
    # obvious edges: flight search -> booking (list -> item), product details -> exchanges
    assert ("search_direct_flight", "book_reservation") in airline
    assert any(m.via == "list item" and m.input == "flights[].flight_number"
               for m in airline[("search_direct_flight", "book_reservation")].matches)
    assert ("get_product_details", "exchange_delivered_order_items") in retail
    assert ("list_all_airports", "book_reservation") in airline  # "The IATA code for the origin city"
    # states: a cancelled order or reservation feeds no tool that needs it pending / not cancelled
    assert ("cancel_pending_order", "modify_pending_order_address") not in retail
    assert ("cancel_pending_order", "get_order_details") in retail
    assert ("cancel_reservation", "update_reservation_flights") not in airline
    # tau-bench itself declares no output: without the imported schemas, no edge at all
    assert G.build_graph(G.load_apis(json.loads((DATA / "retail" / "tools.json").read_text()))) == []

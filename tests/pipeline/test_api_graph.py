"""The API compatibility matcher on hand-made API pairs (pure)."""
from __future__ import annotations

import pytest

from generation.pipeline import api_graph as G

F = G.Field


def api(name, inputs=(), outputs=(), desc=""):
    return G.ApiNode(name, desc, [F(*i) for i in inputs], [F(*o) for o in outputs])


FIND_USER = api("find_user_id_by_email", [("email", "string", "The email of the user")],
                [("user_id", "str", "The user id if found")])
GET_USER = api("get_user_details", [("user_id", "string", "The user id, such as 'sara_doe_496'")],
               [("user_details", "User", "The user details")])
GET_ORDER = api("get_order_details", [("order_id", "string", "The order id, such as '#W0000000'")],
                [("order", "Order", "The order details")])
CANCEL = api("cancel_order", [("order_id", "string", "The order id"), ("reason", "string", "Why")],
             [("order", "Order", "The order after the cancellation")])
HOTEL = api("hotel_search", [("Location", "ShortString", "Location")], [("Name", "ShortString", "Hotel name")])
HOTEL_BOOK = api("hotel_reserve", [("Name", "ShortString", "Hotel name"), ("CustomerName", "ShortString", "Customer")],
                 [("Message", "ShortString", "Message")])
RESTAURANT_BOOK = api("restaurant_reserve", [("Name", "ShortString", "Restaurant name")],
                      [("ReservationStatus", "ShortString", "Status")])
WEATHER = api("weather", [("is_raining", "bool", "")], [])
TEMPERATURE = api("temperature", [], [("celsius", "int", "Temperature in Celsius")])


def edges(*apis, **kw):
    return {(e.source, e.target): e for e in G.build_graph(list(apis), **kw)}


def test_same_name_id_fills_the_next_call():
    got = edges(FIND_USER, GET_USER)
    assert set(got) == {("find_user_id_by_email", "get_user_details")}
    m = got[("find_user_id_by_email", "get_user_details")].matches[0]
    assert (m.output, m.input, m.how) == ("user_id", "user_id", "name")


def test_a_record_fills_only_the_fields_it_declares():
    """The old entity rule linked an output typed `Order` to every `order_id`; a record that does not
    hold the id (a user record holds no user_id) fills nothing."""
    assert edges(GET_ORDER, CANCEL) == {}  # "order" (Order) declares no order_id
    loose = api("find_user", [("email", "str", "")], [("user_id", "dict", "")])  # the paper's loose typing
    assert set(edges(loose, GET_USER)) == {("find_user", "get_user_details")}  # its very name: it is the id
    order = [("order", "object", "The order"), ("order_id", "string", "The order id")]
    got = edges(api("get_order_details", [("order_id", "string", "")], order), CANCEL)
    assert set(got) == {("get_order_details", "cancel_order")}
    assert [(m.output, m.input, m.how) for m in got[("get_order_details", "cancel_order")].matches] == [
        ("order_id", "order_id", "name")]


def test_generic_names_link_only_within_a_domain():
    got = edges(HOTEL, HOTEL_BOOK, RESTAURANT_BOOK)
    assert ("hotel_search", "hotel_reserve") in got
    assert ("hotel_search", "restaurant_reserve") not in got
    assert ("hotel_reserve", "restaurant_reserve") not in got  # Message/Name across domains


def test_incompatible_types_never_match():
    assert G.types_compatible("int", "string") and not G.types_compatible("int", "bool")
    assert edges(TEMPERATURE, WEATHER) == {}


def test_min_score_and_no_self_edges():
    strict = edges(FIND_USER, GET_USER, GET_ORDER, CANCEL, min_score=0.99)
    loose = edges(FIND_USER, GET_USER, GET_ORDER, CANCEL, min_score=0.3)
    assert set(strict) <= set(loose) and all(s != t for s, t in loose)


def test_embeddings_are_used_when_given():
    calls = []

    def embed(texts):
        calls.append(list(texts))
        return [[1.0, 0.0] for _ in texts]  # every description the same: similarity 1

    e = edges(FIND_USER, GET_USER, embed=embed)[("find_user_id_by_email", "get_user_details")]
    assert calls and e.score == pytest.approx(1.0)


def test_chains_follow_edges_best_first():
    es = G.build_graph([FIND_USER, GET_USER, GET_ORDER, CANCEL])
    assert ["find_user_id_by_email", "get_user_details"] in G.chains(es, length=2)
    for chain in G.chains(es, length=3):
        assert len(set(chain)) == 3


def test_loaders_read_the_published_shapes_and_name_bad_items():
    tau = {"type": "function", "function": {"name": "get_order_details", "description": "Get the order.",
           "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}
    tau2 = {"name": "get_user_details", "parameters": {"properties": {"user_id": {"type": "string"}}},
            "returns": {"python_type": "User", "description": "User: The user details."}}
    star = {"function": "ride_status", "input": [{"Name": "id", "Type": "Integer"}],
            "output": [{"Name": "DriverName", "Type": "ShortString"}]}
    ours = {"name": "refund", "params": [{"order_id": "int"}], "output": {"name": "ok", "type": "bool"}}
    mcp = {"name": "lookup", "inputSchema": {"type": "object"},
           "outputSchema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}
    nodes = G.load_apis([tau, tau2, star, ours, mcp])
    assert [n.name for n in nodes] == ["get_order_details", "get_user_details", "ride_status", "refund", "lookup"]
    # tau-bench declares no output and tau2 only a type name: no field is made up from the API name
    assert nodes[0].outputs == [] and nodes[1].outputs == []
    assert nodes[2].outputs[0].name == "DriverName" and nodes[3].outputs[0].name == "ok"
    assert nodes[3].inputs[0].name == "order_id" and [f.name for f in nodes[4].outputs] == ["order_id"]
    with pytest.raises(G.ApiGraphInputError, match="item 1: field 'name'"):
        G.load_apis([ours, {"params": []}])


def test_dot_escapes_quotes_in_names():
    evil = api('say "hi"', [("x", "str", "")], [("user_id", "str", "")])
    dot = G.graph_to_dot([evil, GET_USER], G.build_graph([evil, GET_USER]))
    assert '"say \\"hi\\""' in dot and "user_id → user_id" in dot

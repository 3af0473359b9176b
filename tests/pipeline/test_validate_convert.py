import json

import networkx as nx
import pytest
from hypothesis import given, settings

from generation.pipeline.apis import parse_api_list
from generation.pipeline.convert import DEFAULT_USER_REPLY, flowgraph_to_conversation_graph
from generation.pipeline.formats import parse_graph_text, write_graph_text
from generation.pipeline.noise import NOISE_LIBRARY, NOISE_REPLY, add_noise
from generation.pipeline.validate import (RULES, Violation, validate_conversation,
                                          validate_conversation_graph, validate_flowgraph)

from .conftest import fixture_text
from .strategies import flowgraphs

A4_APIS = ["get_order_details_by_email", "get_order_details_by_phone_number", "cancel_order", "refund_order"]


def rules(violations):
    return {v.rule for v in violations}


def a4():
    return parse_graph_text(fixture_text("a4_flowgraph.txt"))


def test_violation_format_and_rule_catalogue():
    assert str(Violation("FG-ROOT", "N3", "boom")) == "FG-ROOT N3: boom"
    for rule in ("FG-ROOT", "FG-NODE-ID", "FG-LEAF-END", "FG-END-OUT", "FG-API-OUT-LABEL",
                 "FG-BACK-TO-ROOT", "FG-UNREACHABLE", "FG-UNKNOWN-API", "FG-DEAD-END", "CG-ROOT",
                 "CG-ASSISTANT-USER", "CV-FIRST-USER", "CV-ORDER", "CV-UNKNOWN-API",
                 "CV-MISSING-PARAM", "CV-UNGROUNDED-VALUE", "CV-OUTPUT-JSON", "CV-OUTPUT-TYPE"):
        assert RULES[rule]


def test_paper_examples_are_valid():
    assert validate_flowgraph(a4(), A4_APIS) == []
    assert validate_conversation_graph(parse_graph_text(fixture_text("a5_conversation_graph.txt"))) == []


@pytest.mark.parametrize("edit, rule, where", [
    (lambda g: g.add_node("N10", type="start_message", label="again"), "FG-ROOT", "graph"),
    (lambda g: nx.relabel_nodes(g, {"N9": "node9"}, copy=False), "FG-NODE-ID", "node9"),
    (lambda g: g.edges["N0", "N1"].update(id="X0"), "FG-EDGE-ID", "X0(N0, N1)"),
    (lambda g: g.nodes["N9"].update(type="message"), "FG-LEAF-END", "N9"),
    (lambda g: g.add_edge("N7", "N4", id="E20", label="again?"), "FG-END-OUT", "N7"),
    (lambda g: g.edges["N2", "N4"].update(label=""), "FG-API-OUT-LABEL", "E3(N2, N4)"),
    (lambda g: g.add_edge("N5", "N0", id="E21", label="restart"), "FG-BACK-TO-ROOT", "E21(N5, N0)"),
    (lambda g: (g.add_node("N11", type="end_message", label="x"), g.add_node("N12", type="message", label="y"),
                g.add_edge("N12", "N11", id="E22", label="z")), "FG-UNREACHABLE", "N12"),
    (lambda g: g.nodes["N6"].update(label="delete_everything"), "FG-UNKNOWN-API", "N6"),
    (lambda g: g.nodes["N3"].update(type="decision"), "FG-NODE-TYPE", "N3"),
    (lambda g: g.nodes["N4"].update(label=" "), "FG-EMPTY-LABEL", "N4"),
])
def test_each_flowgraph_rule_fires(edit, rule, where):
    g = a4()
    edit(g)
    found = validate_flowgraph(g, A4_APIS)
    assert any(v.rule == rule and v.where == where for v in found), found


def test_cycles_are_allowed_but_traps_are_dead_ends():
    g = parse_graph_text("[N0](start_message){a}\n[N1](message){b}\n[N2](message){c}\n"
                         "[N3](end_message){d}\n[E0](N0, N1){x}\n[E1](N1, N2){y}\n[E2](N2, N1){z}\n"
                         "[E3](N0, N3){w}")
    found = validate_flowgraph(g)
    assert {(v.rule, v.where) for v in found} == {("FG-DEAD-END", "N1"), ("FG-DEAD-END", "N2")}


def cg():
    return parse_graph_text(fixture_text("a5_conversation_graph.txt"))


@pytest.mark.parametrize("edit, rule", [
    (lambda g: g.nodes["N0"].update(type="user"), "CG-ROOT"),
    (lambda g: g.add_edge("N2", "N4", id="E30", label=""), "CG-ASSISTANT-USER"),
    (lambda g: g.add_edge("N3", "N7", id="E31", label=""), "CG-USER-NEXT"),
    (lambda g: g.add_edge("N9", "N11", id="E32", label="odd"), "CG-API-NEXT"),
    (lambda g: g.edges["N4", "N5"].update(label=""), "CG-API-OUT-LABEL"),
    (lambda g: g.edges["N0", "N1"].update(label="hello"), "CG-LABEL-NON-API"),
    (lambda g: g.remove_edge("N12", "N13"), "CG-LEAF-ASSISTANT"),
    (lambda g: g.add_node("N20", type="assistant", label="floating"), "CG-ROOT"),
])
def test_each_conversation_graph_rule_fires(edit, rule):
    g = cg()
    edit(g)
    assert rule in rules(validate_conversation_graph(g))


def test_a5_conversion_is_isomorphic_to_the_papers_output():
    """The paper's output renames the last leaf ("Your order has been refunded" vs the input's
    "Order refunded"); everything else, including labels, must match, so we compare structure,
    node types and edge labels everywhere and node labels except on that one leaf."""
    ours = flowgraph_to_conversation_graph(parse_graph_text(fixture_text("a5_flowgraph.txt")))
    paper = cg()
    assert validate_conversation_graph(ours) == []
    assert nx.is_isomorphic(ours, paper, node_match=lambda a, b: a["type"] == b["type"],
                            edge_match=lambda a, b: a["label"] == b["label"])
    paper.nodes["N13"]["label"] = "Order refunded"
    assert nx.is_isomorphic(ours, paper, node_match=lambda a, b: (a["type"], a["label"]) == (b["type"], b["label"]),
                            edge_match=lambda a, b: a["label"] == b["label"])


def test_conversion_is_deterministic_and_fills_unlabelled_replies():
    g = a4()
    assert write_graph_text(flowgraph_to_conversation_graph(g)) == write_graph_text(flowgraph_to_conversation_graph(a4()))
    g.edges["N0", "N1"]["label"] = ""
    out = flowgraph_to_conversation_graph(g)
    assert DEFAULT_USER_REPLY in {d["label"] for _, d in out.nodes(data=True) if d["type"] == "user"}


@settings(max_examples=50, deadline=None)
@given(flowgraphs())
def test_random_valid_flowgraphs_convert_to_valid_conversation_graphs(fg):
    g, apis = fg
    assert validate_flowgraph(g, [a.name for a in apis]) == []
    out = flowgraph_to_conversation_graph(g)
    assert validate_conversation_graph(out, [a.name for a in apis]) == []
    # every message edge became a user turn, every api edge stayed a labelled edge
    n_api_edges = sum(1 for u, _ in g.edges if g.nodes[u]["type"] == "api")
    assert out.number_of_nodes() == len(g) + g.number_of_edges() - n_api_edges


@settings(max_examples=40, deadline=None)
@given(flowgraphs(), )
def test_noise_is_seeded_marked_and_keeps_graph_valid(fg):
    g, _ = fg
    base = flowgraph_to_conversation_graph(g)
    noisy = add_noise(base, 0.5, seed=7)
    assert write_graph_text(noisy) == write_graph_text(add_noise(base, 0.5, seed=7))
    assert validate_conversation_graph(noisy) == []
    assert set(base.nodes) <= set(noisy.nodes) and len(base) == len(flowgraph_to_conversation_graph(g))
    for n, d in noisy.nodes(data=True):
        if n not in base:
            assert d["noise"] in NOISE_LIBRARY
            if d["type"] == "user":
                assert d["label"] in NOISE_LIBRARY[d["noise"]]
            else:
                assert d["label"] == NOISE_REPLY


def test_noise_probability_extremes():
    base = flowgraph_to_conversation_graph(a4())
    assistants = [n for n, d in base.nodes(data=True) if d["type"] == "assistant"]
    assert len(add_noise(base, 0.0, 1)) == len(base)
    assert len(add_noise(base, 1.0, 1)) == len(base) + 2 * len(assistants)
    assert set(NOISE_LIBRARY) >= {"out_of_procedure", "attack"}
    with pytest.raises(ValueError):
        add_noise(base, 1.5, 0)


def test_conversation_rules_fire():
    apis = parse_api_list(json.loads(fixture_text("a6_apis.json")))
    good = json.loads(fixture_text("a6_conversation.json"))
    assert validate_conversation(good, apis) == []  # the paper's A.6 example passes the checker
    cases = [
        (good[1:], "CV-FIRST-USER"),
        (good[:3] + good[4:], "CV-ORDER"),
        (good[:5], "CV-LAST-ASSISTANT"),
        ([*good[:3], {"role": "api", "content": "get_order_details(order_id=999)"}, *good[4:]], "CV-UNGROUNDED-VALUE"),
        ([*good[:3], {"role": "api", "content": "get_order_details()"}, *good[4:]], "CV-MISSING-PARAM"),
        ([*good[:3], {"role": "api", "content": "get_order_details(order_id=812, x=1)"}, *good[4:]], "CV-UNKNOWN-PARAM"),
        ([*good[:3], {"role": "api", "content": "cancel(order_id=812)"}, *good[4:]], "CV-UNKNOWN-API"),
        ([*good[:3], {"role": "api", "content": "get_order_details order 812"}, *good[4:]], "CV-API-SYNTAX"),
        ([*good[:4], {"role": "api_output", "content": "{'sent_status': []}"}, good[5]], "CV-OUTPUT-JSON"),
        ([*good[:4], {"role": "api_output", "content": '{"sent_status": "shipped"}'}, good[5]], "CV-OUTPUT-TYPE"),
        ([{"role": "customer", "content": "hi"}, *good], "CV-ROLE"),
        ([], "CV-EMPTY"),
    ]
    for messages, rule in cases:
        assert rule in rules(validate_conversation(messages, apis)), rule


def test_values_returned_by_an_earlier_api_are_grounded():
    apis = parse_api_list({"apis": [
        {"name": "find_user", "params": [{"email": "str"}], "output": {"name": "user", "type": "dict"}},
        {"name": "get_orders", "params": [{"user_id": "str"}], "output": "list[str]"}]})
    msgs = [{"role": "user", "content": "I am ann@mailbox.org"},
            {"role": "api", "content": "find_user(email='ann@mailbox.org')"},
            {"role": "api_output", "content": '{"user": {"user_id": "U-77"}}'},
            {"role": "api", "content": "get_orders(user_id='U-77')"},
            {"role": "api_output", "content": '["A1"]'},
            {"role": "assistant", "content": "You have one order."}]
    assert validate_conversation(msgs, apis) == []

import json

import networkx as nx
import pytest
from hypothesis import given, settings

from generation.pipeline.formats import (GraphFormatError, GraphParseError, graph_from_json,
                                         graph_to_json, load_graph, parse_graph_text, write_graph_text)

from .conftest import fixture_text
from .strategies import flowgraphs


def same_graph(a: nx.DiGraph, b: nx.DiGraph) -> bool:
    return (list(a.nodes(data=True)) == list(b.nodes(data=True))
            and sorted(a.edges(data=True)) == sorted(b.edges(data=True))
            and a.graph["kind"] == b.graph["kind"])


def test_a4_example_parses_with_repeated_edge_ids_gaps_and_cycles():
    g = parse_graph_text(fixture_text("a4_flowgraph.txt"))
    assert g.graph["kind"] == "flowgraph"
    assert len(g) == 10 and g.number_of_edges() == 13  # all 13 edges kept although ids repeat
    assert g.edges["N2", "N4"]["id"] == "E3" and g.edges["N1", "N3"]["id"] == "E3"
    assert g.edges["N5", "N2"]["label"] == "User provides another email or order id"
    assert not nx.is_directed_acyclic_graph(g)
    assert g.nodes["N2"] == {"type": "api", "label": "get_order_details_by_email"}


def test_whitespace_prose_and_fences_outside_flow_are_ignored():
    text = "Here is the graph:\n```\n<flow>\n  [N0] ( start_message ) { Hi }  \n\n[N1](end_message){Bye}\n[E7]( N0 ,N1 ){ ok }\n</flow>\n```\nThanks"
    g = parse_graph_text(text)
    assert g.nodes["N0"]["label"] == "Hi" and g.edges["N0", "N1"]["label"] == "ok"


def test_parse_errors_name_the_line():
    with pytest.raises(GraphParseError) as exc:
        parse_graph_text("[N0](start_message){a}\nthis is not a line\n")
    assert exc.value.line == 2 and str(exc.value).startswith("line 2:")
    with pytest.raises(GraphParseError, match="line 2: edge E0 refers to undefined node N9"):
        parse_graph_text("[N0](start_message){a}\n[E0](N0, N9){x}")
    with pytest.raises(GraphParseError, match="line 2: node N0 is defined twice"):
        parse_graph_text("[N0](start_message){a}\n[N0](message){b}")


def test_repeated_source_target_pair_is_recorded_not_silently_dropped():
    g = parse_graph_text("[N0](start_message){a}\n[N1](end_message){b}\n[E0](N0, N1){x}\n[E1](N0, N1){y}")
    assert g.edges["N0", "N1"]["label"] == "x"
    assert "repeats" in g.graph["warnings"][0]


def test_kind_inference_and_override():
    assert parse_graph_text(fixture_text("a5_conversation_graph.txt")).graph["kind"] == "conversation"
    assert parse_graph_text("[N0](api){x}", kind="conversation").graph["kind"] == "conversation"


@settings(max_examples=50, deadline=None)
@given(flowgraphs())
def test_text_round_trip(fg):
    g, _ = fg
    assert same_graph(parse_graph_text(write_graph_text(g)), g)


@settings(max_examples=50, deadline=None)
@given(flowgraphs())
def test_json_round_trip(fg):
    g, _ = fg
    g.nodes["N1"]["noise"] = "attack"
    data = json.loads(json.dumps(graph_to_json(g)))
    assert same_graph(graph_from_json(data), g)


def test_json_errors_name_the_item():
    with pytest.raises(GraphFormatError, match=r"edges\[0\]: target 'N5' is not a node"):
        graph_from_json({"nodes": [{"id": "N0", "type": "assistant", "label": "x"}],
                         "edges": [{"source": "N0", "target": "N5"}]})


def test_load_graph_reads_json_and_text():
    g = parse_graph_text(fixture_text("a4_flowgraph.txt"))
    assert same_graph(load_graph(json.dumps(graph_to_json(g))), g)
    assert same_graph(load_graph(write_graph_text(g)), g)

"""Mermaid as Mermaid defines it: every shape and spelling, checked against the generator's truth.

The strategy in :mod:`tests.pipeline.mermaid_charts` writes FlowBench-style charts in random
spellings and knows what each state says, its shape, the edges and which tools each state calls.
"""
from __future__ import annotations

from collections import Counter

import networkx as nx
import pytest
from hypothesis import given, settings

from generation.pipeline.apis import ApiSpec
from generation.pipeline.mermaid import MermaidSyntaxError, mermaid_to_flowgraph
from generation.pipeline.mermaid.calls import tool_calls
from generation.pipeline.mermaid.syntax import read_mermaid, write_chart
from generation.pipeline.mermaid.text import escape, read_label
from generation.pipeline.render import to_mermaid

from .mermaid_charts import CALLS, MENTIONS, TOOLS, WHOLE, charts

SPECS = [ApiSpec(t) for t in TOOLS]


def _same(g1: nx.DiGraph, g2: nx.DiGraph) -> bool:
    return nx.is_isomorphic(g1, g2, node_match=lambda a, b: (a["type"], a["label"]) == (b["type"], b["label"]),
                            edge_match=lambda a, b: a["label"] == b["label"])


@settings(max_examples=200, deadline=None)
@given(charts())
def test_generated_charts_read_convert_and_round_trip_against_their_truth(chart):
    read = read_mermaid(chart.text)
    assert read.problems == [], chart.text
    assert read.labels == chart.labels and read.shapes == chart.shapes
    assert Counter(read.edges) == Counter(chart.edges)
    # Chart level: written back in the canonical spelling, the same chart is read.
    again = read_mermaid(write_chart(read))
    assert (again.labels, again.shapes, again.edges) == (read.labels, read.shapes, read.edges)
    # Call detection: each state's api nodes are exactly the tools it calls, in order.
    g, report = mermaid_to_flowgraph(chart.text, SPECS)
    by_state: dict[str, list[str]] = {s: [] for s in chart.labels}
    for n, d in g.nodes(data=True):
        if d["type"] == "api":
            by_state[d["source_id"]].append(d["label"])
    assert by_state == chart.calls, (chart.text, report)
    # Every transition of the chart is an edge of the flowgraph, with its label.
    for u, v, label in chart.edges:
        if u == v and not chart.calls[u]:
            continue
        assert any(g.nodes[x]["source_id"] == u and g.nodes[y]["source_id"] == v and
                   d["label"] == (label or ("Done" if g.nodes[x]["type"] == "api" else ""))
                   for x, y, d in g.edges(data=True)), (u, v, label, chart.text)
    # Flowgraph level: Mermaid -> flowgraph -> Mermaid -> flowgraph is exact.
    text = to_mermaid(g)
    back, back_report = mermaid_to_flowgraph(text, SPECS)
    assert back_report == [] and _same(g, back) and to_mermaid(back) == text


SHAPE_CASES = [
    ("A[rect]", "rectangle"), ("A(round)", "round"), ("A([stadium])", "stadium"), ("A[[sub]]", "subroutine"),
    ("A[(cyl)]", "cylinder"), ("A((circle))", "circle"), ("A>asym]", "asymmetric"), ("A{rhombus}", "rhombus"),
    ("A{{hexagon}}", "hexagon"), ("A[/para/]", "parallelogram"), ("A[\\para\\]", "parallelogram-alt"),
    ("A[/trap\\]", "trapezoid"), ("A[\\trap/]", "trapezoid-alt"), ("A(((double)))", "double-circle"),
    ("A>[published]", "asymmetric"), ('A@{ shape: cyl, label: "data" }', "cylinder"),
    ("A@{ shape: doc }", "doc"),
]


@pytest.mark.parametrize("node, shape", SHAPE_CASES, ids=[s for _, s in SHAPE_CASES])
def test_every_shape(node, shape):
    chart = read_mermaid(f"flowchart TD\n{node} --> B[next]\n")
    assert chart.problems == [] and chart.shapes["A"] == shape and chart.edges == [("A", "B", "")]
    expected = node.split("@")[0] if "shape: doc" in node else node[1:].strip("[](){}<>/\\@").split(",")[0]
    if "@" not in node:
        assert chart.labels["A"] == expected.lstrip("[(/\\").rstrip(")]/\\")
    assert read_mermaid(write_chart(chart)).shapes == chart.shapes


@pytest.mark.parametrize("raw, text", [
    ('"a #quot;quoted#quot; word"', 'a "quoted" word'),
    ('"`**bold** and *it* and _em_ for check_in`"', "bold and it and em for check_in"),
    ("one<br>two<br/>three<br />four", "one two three four"),
    ("first line\n   second line", "first line second line"),
    ('"#35;1 #9829; #lt;b#gt; #amp;"', "#1 ♥ <b> &"),
    ("room #12; stays", "room #12; stays"),
])
def test_label_text(raw, text):
    assert read_label(raw) == text


def test_escape_reads_back_any_text():
    for text in ['Ask "why" | <b>now</b> & [then] #quot; `code` #35;', "`*a*`", "#12;"]:
        assert read_label('"' + escape(text) + '"') == " ".join(text.split())


PUBLISHED = """Below is the workflow of the hotel booking scenario.
flowchart TD
H000(Start)--Book a hotel-->H001>[Ask the user for the city and dates,
call API:searchHotel to find rooms,
and check the returned is_found]
H001--Rooms found-->H002>[Ask which room suits the user,
call API: bookHotel and check is_booked]
H001--No rooms-->H003[Tell the user no room is free]
H002--Booked-->H004[Give the booking number]
H002--Not booked-->H003
"""


def test_published_asymmetric_variant_with_text_over_lines_and_calls_without_space():
    tools = [ApiSpec("searchHotel"), ApiSpec("bookHotel")]
    g, report = mermaid_to_flowgraph(PUBLISHED, tools)  # strict: no problem at all
    labels = {d["source_id"]: d["label"] for _, d in g.nodes(data=True) if d["type"] == "message"}
    assert labels["H001"].endswith("and check the returned is_found")
    assert sorted(d["label"] for _, d in g.nodes(data=True) if d["type"] == "api") == ["bookHotel", "searchHotel"]
    assert sum(1 for _, d in g.nodes(data=True) if d["type"] == "end_message") == 2
    assert any("H001>[...]" in r for r in report)


@pytest.mark.parametrize("spelling", CALLS + WHOLE)
def test_each_call_spelling_is_a_call(spelling):
    assert [t for t, _ in tool_calls("Ask the guest, " + spelling.format(t="findRoom") + " and wait", SPECS)] \
        == ["findRoom"] or spelling in WHOLE
    assert [t for t, _ in tool_calls(spelling.format(t="findRoom"), SPECS)] == ["findRoom"]


@pytest.mark.parametrize("spelling", MENTIONS)
def test_each_mention_is_not_a_call(spelling):
    assert tool_calls("Tell the guest " + spelling.format(t="findRoom"), SPECS) == []


def test_an_empty_chart_is_refused_even_leniently():
    for text in ["", "flowchart TD\n", "Some prose only.\n", "flowchart LR\n%% just a comment\n"]:
        with pytest.raises(MermaidSyntaxError, match="the chart is empty"):
            mermaid_to_flowgraph(text, [], strict=False)


def test_text_inside_a_node_that_looks_like_a_directive_or_a_call_stays_text():
    chart = read_mermaid("flowchart TD\nA[Ask the guest,\nend the call politely,\nfindRoom(city) first\n"
                         "style of speech: warm] --> B[Bye]\n")
    assert chart.problems == []
    assert chart.labels["A"] == "Ask the guest, end the call politely, findRoom(city) first style of speech: warm"


def test_flowgraph_labels_that_look_like_mermaid_syntax_round_trip():
    from generation.pipeline.formats import parse_graph_text

    g = parse_graph_text("[N0](start_message){Say #35; and #quot; literally}\n[N1](end_message){`code` and **not bold**}\n"
                         "[E0](N0, N1){<br> stays | text}\n")
    back, report = mermaid_to_flowgraph(to_mermaid(g), [])
    assert report == [] and _same(g, back)

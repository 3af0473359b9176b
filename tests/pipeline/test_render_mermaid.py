import re
import shutil

import networkx as nx
import pytest

from generation.pipeline.apis import ApiSpec
from generation.pipeline.formats import parse_graph_text
from generation.pipeline.mermaid import mermaid_to_flowgraph
from generation.pipeline.noise import add_noise
from generation.pipeline import render
from generation.pipeline.render import GraphvizMissing, to_code, to_dot, to_mermaid, to_outline, to_svg
from generation.pipeline.convert import flowgraph_to_conversation_graph

from .conftest import fixture_text

HOSTILE = '<script>alert("x")</script> "]; evil -> n0 [color=red \\N \\'


def a4():
    return parse_graph_text(fixture_text("a4_flowgraph.txt"))


def test_dot_uses_paper_colours_and_marks_noise_and_path():
    dot = to_dot(a4())
    assert 'fillcolor="#1f77b4"' in dot and 'fillcolor="#000000"' in dot and 'fillcolor="#ff7f0e"' in dot
    cg = add_noise(flowgraph_to_conversation_graph(a4()), 1.0, 0)
    dot = to_dot(cg, highlight_path=["N0", "N1", "N2"])
    assert 'fillcolor="#2ca02c"' in dot and "[noise: " in dot and "dashed" in dot
    assert dot.count(f'color="{render.HIGHLIGHT_COLOUR}"') >= 5  # 3 nodes + 2 edges


def test_dot_escapes_hostile_labels():
    g = a4()
    g.nodes["N1"]["label"] = HOSTILE
    g.edges["N0", "N1"]["label"] = HOSTILE
    dot = to_dot(g)
    # Strip every well-formed DOT string: whatever is left is structure, and must not contain
    # anything that came from the label.
    structure = re.sub(r'"(?:[^"\\]|\\.)*"', '""', dot)
    assert "evil" not in structure and "script" not in structure
    assert '\\\\N' in dot  # the backslash escape was doubled, so dot will not expand \N


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")
def test_svg_contains_escaped_labels_and_no_injected_nodes():
    g = a4()
    g.nodes["N1"]["label"] = HOSTILE
    g.edges["N0", "N1"]["label"] = HOSTILE
    svg = to_svg(g, highlight_path=["N0", "N1"])
    assert svg.startswith("<svg")
    assert "<script" not in svg.lower()
    assert "&lt;script&gt;" in svg
    assert svg.count('class="node"') == len(g)  # the label did not create an "evil" node
    assert svg.count('class="edge"') == g.number_of_edges()


def test_svg_without_graphviz_raises_clear_error(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no dot program
    with pytest.raises(GraphvizMissing, match="apt-get install graphviz"):
        to_svg(a4())


def test_mermaid_round_trip_is_exact_even_with_hostile_text():
    g = a4()
    g.nodes["N1"]["label"] = 'Ask "why" | <b>now</b> & [then]'
    back, report = mermaid_to_flowgraph(to_mermaid(g), [])
    assert report == []
    assert nx.is_isomorphic(g, back, node_match=lambda a, b: (a["type"], a["label"]) == (b["type"], b["label"]),
                            edge_match=lambda a, b: a["label"] == b["label"])


FLOWBENCH_STYLE = """flowchart TD
S0(Start)--Wants a table-->S1>Ask for the restaurant and time,
call findTable and check the returned ok]
S1--Table free-->S2[Ask to confirm, call holdTable]
S1--No table-->S3[Say nothing is free and offer another time]
S3--Tries another time-->S1
S2 & S3--Done-->S4[Thank the customer]
S9((orphan))
"""


def test_flowbench_style_import_maps_tool_calls_and_reports_the_rest():
    tools = [ApiSpec("findTable"), ApiSpec("holdTable"), ApiSpec("neverUsed")]
    g, report = mermaid_to_flowgraph(FLOWBENCH_STYLE, tools)
    types = {d["label"]: d["type"] for _, d in g.nodes(data=True)}
    assert types["findTable"] == "api" and types["holdTable"] == "api"
    api = next(n for n, d in g.nodes(data=True) if d["label"] == "findTable")
    assert sorted(d["label"] for _, _, d in g.out_edges(api, data=True)) == ["No table", "Table free"]
    joined = "\n".join(report)
    assert "neverUsed is never called" in joined
    assert "S9" in joined  # the orphan state is reported, not silently dropped
    assert "Greet the customer" in joined


def test_code_and_outline_cover_every_node_and_branch():
    g = a4()
    code = to_code(g)
    compile(code, "<procedure>", "exec")  # the pseudo-code is syntactically Python
    assert code.count("def step_") == len(g)
    assert "matches(result, 'Order not Found')" in code
    outline = to_outline(g)
    assert outline.count("go to step") == g.number_of_edges()
    assert "Call the API: cancel_order" in outline

"""generation.pipeline.graphviz_lib: Graphviz's library in the process draws exactly what dot draws."""
import multiprocessing
import shutil
import subprocess
import threading

import pytest

from generation.pipeline import graphviz_env, graphviz_lib, render
from generation.pipeline.convert import flowgraph_to_conversation_graph
from generation.pipeline.formats import parse_graph_text
from generation.pipeline.render import to_dot, to_svg
from tests.curation.factories import FLOWGRAPH_TEXT, HOSTILE

pytestmark = pytest.mark.skipif(shutil.which("dot") is None or not graphviz_lib.available(),
                                reason="Graphviz (program and library) is not installed")


def _program(dot: str) -> str:
    """What `dot -Tsvg` prints with the same (lean) plugins."""
    return subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True, check=True,
                          env=graphviz_env.dot_env()).stdout


def _graphs():
    hostile = FLOWGRAPH_TEXT.replace("Please tell me your order id.",
                                     f"Please tell me your order id. {HOSTILE} — naïve café ✓ \\n tab\there")
    assert hostile != FLOWGRAPH_TEXT
    for text in (FLOWGRAPH_TEXT, hostile):
        fg = parse_graph_text(text, kind="flowgraph")
        cg = flowgraph_to_conversation_graph(fg)
        path = list(cg.nodes)[:4]
        yield fg, {}
        yield cg, {}
        yield cg, {"highlight_path": path}
        yield fg, {"covered_edges": set(list(fg.edges)[:3])}


def test_the_library_draws_byte_for_byte_what_the_program_draws():
    n = 0
    for g, kw in _graphs():
        dot = to_dot(g, **kw)
        drawn = graphviz_lib.render(dot, g.number_of_nodes(), g.number_of_edges())
        assert drawn is not None
        assert drawn == _program(dot)
        n += 1
    assert n == 8


def test_hostile_labels_stay_escaped_text():
    g = parse_graph_text(FLOWGRAPH_TEXT.replace("Please tell me your order id.", HOSTILE), kind="flowgraph")
    svg = graphviz_lib.render(to_dot(g), g.number_of_nodes(), g.number_of_edges())
    assert "<script>" not in svg and "&lt;script&gt;" in svg


def test_to_svg_uses_the_library_for_small_graphs_and_the_program_for_big_ones(monkeypatch):
    calls = []
    real_run = subprocess.run
    monkeypatch.setattr(render.subprocess, "run", lambda *a, **k: calls.append(a) or real_run(*a, **k))
    g = parse_graph_text(FLOWGRAPH_TEXT, kind="flowgraph")
    small = to_svg(g)
    assert calls == []  # no program started
    monkeypatch.setattr(graphviz_lib, "MAX_NODES", g.number_of_nodes() - 1)
    big = to_svg(g)
    assert len(calls) == 1
    assert small == big  # the same drawing either way


def test_what_the_library_cannot_parse_goes_to_the_program_which_reports_it():
    assert graphviz_lib.render("digraph { a -> ; }", 1, 1) is None
    assert graphviz_lib.render("not a graph at all", 1, 1) is None
    # The library is still usable after a failure.
    g = parse_graph_text(FLOWGRAPH_TEXT, kind="flowgraph")
    assert graphviz_lib.render(to_dot(g), g.number_of_nodes(), g.number_of_edges()).startswith("<?xml")


def test_without_the_library_to_svg_runs_the_program(monkeypatch):
    monkeypatch.setattr(graphviz_lib, "_LIBRARIES", ("libgvc-missing.so.0", "libcgraph-missing.so.0"))
    monkeypatch.setattr(graphviz_lib, "_state", {})
    assert graphviz_lib.available() is False
    g = parse_graph_text(FLOWGRAPH_TEXT, kind="flowgraph")
    assert graphviz_lib.render(to_dot(g), 3, 3) is None
    assert to_svg(g) == _program(to_dot(g))[_program(to_dot(g)).find("<svg"):]


def test_threads_drawing_at_once_all_get_their_own_graph():
    graphs = [(g, kw) for g, kw in _graphs()]
    expected = [_program(to_dot(g, **kw)) for g, kw in graphs]
    errors, start = [], threading.Barrier(8)

    def work(k):
        start.wait()
        for i in range(25):
            j = (k + i) % len(graphs)
            g, kw = graphs[j]
            if graphviz_lib.render(to_dot(g, **kw), g.number_of_nodes(), g.number_of_edges()) != expected[j]:
                errors.append((k, i))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def _child(q):
    g = parse_graph_text(FLOWGRAPH_TEXT, kind="flowgraph")
    q.put(graphviz_lib.render(to_dot(g), g.number_of_nodes(), g.number_of_edges()))


def test_a_forked_worker_makes_its_own_context_and_draws_the_same():
    g = parse_graph_text(FLOWGRAPH_TEXT, kind="flowgraph")
    here = graphviz_lib.render(to_dot(g), g.number_of_nodes(), g.number_of_edges())  # the parent's context
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q,))
    p.start()
    got = q.get(timeout=60)
    p.join(60)
    assert p.exitcode == 0
    assert got == here


def test_the_environment_switch_turns_the_library_off(monkeypatch):
    monkeypatch.setenv("GRAPHVIZ_IN_PROCESS", "0")
    monkeypatch.setattr(graphviz_lib, "_state", {})
    assert graphviz_lib.available() is False
    monkeypatch.setenv("GRAPHVIZ_IN_PROCESS", "1")
    monkeypatch.setattr(graphviz_lib, "_state", {})
    assert graphviz_lib.available() is True


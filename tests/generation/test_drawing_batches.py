"""Graphs drawn together: one `dot` process for a task's graphs (and for both layouts of each),
with the same drawings as one at a time, and a bad graph costing only itself."""
from __future__ import annotations

import json
import shutil

import pytest

from generation import drawings
from generation.imports import items_import
from generation.models import ConversationGraph, Flowgraph
from generation.pipeline import render
from tests.datasets.builders import document

pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz missing")]


@pytest.fixture
def dot_runs(monkeypatch):
    """How many `dot` processes were started, and how many graphs each was given."""
    runs: list[int] = []
    real = render.execute.run_check

    def counting(cmd, *args, **kwargs):
        runs.append(kwargs["input"].decode().count("digraph"))
        return real(cmd, *args, **kwargs)

    monkeypatch.setattr(render.execute, "run_check", counting)
    return runs


def test_a_task_draws_its_graphs_with_one_dot_and_the_drawings_equal_single_ones(dot_runs):
    items_import(raw=json.dumps(document(n_procedures=4)), fmt="almita")
    for model in (Flowgraph, ConversationGraph):
        rows = list(model.objects.order_by("pk"))
        alone = [drawings.graph_drawing(row.data) for row in rows]
        assert len(dot_runs) == len(rows)  # alone: one process per graph, both layouts in it
        assert all(n == 2 for n in dot_runs)  # every graph here has 3 nodes or more
        dot_runs.clear()
        assert drawings.graphs_draw(model._meta.label_lower, [row.pk for row in rows]) == len(rows)
        assert dot_runs == [2 * len(rows)]
        dot_runs.clear()
        stored = dict(model.objects.values_list("pk", "svg"))
        assert [stored[row.pk] for row in rows] == [svg for svg, _ in alone]
        assert all(error == "" and drawings.is_drawn(svg) for svg, error in alone)
        # every drawing keeps Graphviz's single-graph group id (dot renames it after a first graph)
        assert all('<g id="graph0"' in svg for svg, _ in alone)


def test_an_unreadable_graph_in_a_batch_is_reported_alone_and_the_others_are_drawn(dot_runs):
    items_import(raw=json.dumps(document(n_procedures=3)), fmt="almita")
    rows = list(Flowgraph.objects.order_by("pk"))
    Flowgraph.objects.filter(pk=rows[1].pk).update(data={"nodes": "not a list"})
    assert drawings.graphs_draw("generation.flowgraph", [row.pk for row in rows]) == 2
    svgs = dict(Flowgraph.objects.values_list("pk", "svg"))
    assert drawings.is_drawn(svgs[rows[0].pk]) and drawings.is_drawn(svgs[rows[2].pk])
    assert not drawings.is_drawn(svgs[rows[1].pk])
    svg, error = drawings.graph_drawing({"nodes": "not a list"})
    assert svg == "" and "could not be read" in error


def test_a_dot_failure_in_a_batch_falls_back_to_one_graph_at_a_time(monkeypatch):
    items_import(raw=json.dumps(document(n_procedures=2)), fmt="almita")
    rows = list(ConversationGraph.objects.order_by("pk"))
    real = render.dots_to_svgs
    sizes = []

    def fail_batches(dots, timeout=None):
        sizes.append(len(dots))
        if len(dots) > 2:
            raise RuntimeError("dot failed: simulated")
        return real(dots, timeout)

    monkeypatch.setattr(render, "dots_to_svgs", fail_batches)
    assert drawings.graphs_draw("generation.conversationgraph", [row.pk for row in rows]) == len(rows)
    assert sizes == [2 * len(rows)] + [2] * len(rows)


def test_dot_output_that_does_not_match_the_graphs_sent_is_an_error(monkeypatch):
    class Proc:
        stdout = b"<svg></svg>"

    monkeypatch.setattr(render.execute, "run_check", lambda *a, **k: Proc())
    with pytest.raises(RuntimeError, match="drew 1 of 2 graphs"):
        render.dots_to_svgs(["digraph { a }", "digraph { b }"])
    assert render.dots_to_svgs([]) == []

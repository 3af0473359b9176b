"""The review page's drawing direction is chosen by the graph's shape (issue #31): of the two
layouts, the one whose labels are larger when the drawing is fitted to the pane."""
from __future__ import annotations

import networkx as nx
import pytest

from generation.pipeline.render import PANE, fit_scale, svg_size, to_svg, to_svg_readable

pytestmark = pytest.mark.skipif(__import__("shutil").which("dot") is None, reason="Graphviz missing")


def _graph(edges, kind="flowgraph"):
    g = nx.DiGraph(kind=kind)
    for u, v in edges:
        for n in (u, v):
            g.add_node(n, type="message", label=f"Step {n}: say something of moderate length here")
        g.add_edge(u, v, label="yes")
    return g


def star(n):  # wide and shallow: one question, many answers
    return _graph([("root", f"leaf{i}") for i in range(n)])


def chain(n):  # long and narrow
    return _graph([(f"s{i}", f"s{i + 1}") for i in range(n)])


@pytest.mark.parametrize("g", [star(10), chain(14), _graph([("a", "b"), ("a", "c"), ("c", "d")]), star(2)])
def test_the_kept_drawing_fits_the_pane_at_least_as_large(g):
    svg, rankdir = to_svg_readable(g)
    tb, lr = (fit_scale(svg_size(to_svg(g, rankdir=d)), PANE) for d in ("TB", "LR"))
    assert f"rankdir={rankdir}" not in svg  # DOT text is not in the SVG; the measured size is
    assert fit_scale(svg_size(svg), PANE) == pytest.approx(max(tb, lr), rel=0.06)
    assert svg == to_svg(g, rankdir=rankdir)


def test_shape_decides_the_direction():
    # A wide star drawn top-to-bottom is a strip far wider than the pane: left-to-right is kept.
    assert to_svg_readable(star(10))[1] == "LR"
    # A long chain drawn left-to-right is a strip far wider than the pane: top-to-bottom is kept.
    assert to_svg_readable(chain(14))[1] == "TB"
    w, h = svg_size(to_svg(star(10)))
    assert w > 3 * h


def test_svg_size_reads_points():
    assert svg_size('<svg width="120pt" height="48.5pt" viewBox="0 0 120 48.5">') == (120.0, 48.5)
    assert svg_size("<svg>") is None and fit_scale(None) == 0.0

"""Renderers: DOT/SVG (paper colours), Mermaid flowchart, Python-like pseudo-code, text outline.

Labels are untrusted (LLM output, imported files). DOT output never puts a label or node id into
DOT syntax unescaped: nodes get generated names (``n0``, ``n1``...) and every label is a quoted
string with backslashes, quotes and newlines escaped, so text such as ``"]; a -> b [`` stays text.
Graphviz's SVG writer escapes ``<``/``>``/``&``, so ``<script>`` in a label arrives as
``&lt;script&gt;`` in the SVG.
"""
from __future__ import annotations


import html
import os
import re
import subprocess
import textwrap
from typing import Any

import graphviz
import networkx as nx
from graphviz.backend import dot_command, execute

from .convert import breadth_first, flowgraph_root

# Paper Figures 2 and 3.
FLOWGRAPH_COLOURS = {"start_message": "#1f77b4", "message": "#1f77b4", "api": "#000000",
                     "end_message": "#ff7f0e"}
CONVERSATION_COLOURS = {"assistant": "#1f77b4", "user": "#2ca02c", "api": "#000000"}
NOISE_COLOUR = "#d62728"
HIGHLIGHT_COLOUR = "#9467bd"
# Coverage drawing: edges some accepted conversation takes, edges none does (colour-blind safe pair,
# told apart by line style too).
COVERED_COLOUR = "#1a9850"
UNCOVERED_COLOUR = "#d73027"


class GraphvizMissing(RuntimeError):
    """The Graphviz ``dot`` executable is not installed."""


# Bounds on one drawing, so a hostile graph cannot hang a worker: `dot` is killed after
# ALMITA_DRAW_TIMEOUT seconds, and a graph above these sizes is not handed to it at all.
MAX_NODES = 1500
MAX_EDGES = 4000
DEFAULT_DRAW_TIMEOUT = 20.0


class GraphTooLarge(ValueError):
    """A graph above MAX_NODES or MAX_EDGES: drawn as a message instead (message_svg)."""


def draw_timeout() -> float:
    """Seconds `dot` may run (environment ALMITA_DRAW_TIMEOUT, default 20)."""
    try:
        value = float(os.environ.get("ALMITA_DRAW_TIMEOUT", DEFAULT_DRAW_TIMEOUT))
    except ValueError:
        return DEFAULT_DRAW_TIMEOUT
    return value if value > 0 else DEFAULT_DRAW_TIMEOUT


def size_guard(nodes: int, edges: int) -> None:
    if nodes > MAX_NODES or edges > MAX_EDGES:
        raise GraphTooLarge(f"This graph has {nodes:,} nodes and {edges:,} edges: too large to draw "
                            f"(the limit is {MAX_NODES:,} nodes and {MAX_EDGES:,} edges).")


def message_svg(text: str) -> str:
    """A small SVG that says `text` (escaped), shown where the drawing would be."""
    return ('<svg xmlns="http://www.w3.org/2000/svg" class="drawing-message" width="460pt" height="40pt" '
            'viewBox="0 0 460 40"><text x="8" y="24" font-family="Helvetica" font-size="12">'
            f"{html.escape(str(text))}</text></svg>")


def dot_escape(text: Any) -> str:
    """Escape for a double-quoted DOT string (also neutralises \\N, \\G, \\l escapes)."""
    return (str(text).replace("\\", "\\\\").replace('"', '\\"')
            .replace("\r", "").replace("\n", "\\n"))


def _wrap(text: str, width: int = 32) -> str:
    lines = textwrap.wrap(" ".join(str(text).split()), width) or [""]
    return "\n".join(lines)


def _colours(g: nx.DiGraph) -> dict[str, str]:
    return CONVERSATION_COLOURS if g.graph.get("kind") == "conversation" else FLOWGRAPH_COLOURS


def to_dot(g: nx.DiGraph, highlight_path: list[Any] | None = None,
           covered_edges: set[tuple[Any, Any]] | None = None, rankdir: str = "TB") -> str:
    """DOT text; with ``covered_edges`` (a coverage drawing) every edge is drawn covered (green,
    solid) or uncovered (red, dashed, thicker) and a legend explains the two."""
    colours = _colours(g)
    names = {n: f"n{i}" for i, n in enumerate(g.nodes)}
    path = list(highlight_path or [])
    path_nodes = set(path)
    path_edges: dict[tuple, list[int]] = {}
    for k in range(len(path) - 1):
        path_edges.setdefault((path[k], path[k + 1]), []).append(k + 1)
    out = [
        "digraph G {",
        f'  graph [rankdir={"LR" if rankdir == "LR" else "TB"}, fontname="Helvetica"];',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, '
        'fontcolor="white"];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    for n, d in g.nodes(data=True):
        ntype = d.get("type", "")
        label = f"{n} ({ntype})\n{_wrap(d.get('label', ''))}"
        attrs = {"label": label, "fillcolor": colours.get(ntype, "#7f7f7f"), "tooltip": str(n)}
        styles = ["rounded", "filled"]
        if d.get("noise"):
            attrs["label"] = f"[noise: {d['noise']}]\n" + label
            attrs["color"] = NOISE_COLOUR
            attrs["penwidth"] = "3"
            styles.append("dashed")
        if n in path_nodes:
            attrs["color"] = HIGHLIGHT_COLOUR
            attrs["penwidth"] = "4"
            styles.append("bold")
        attrs["style"] = ",".join(styles)
        out.append(f"  {names[n]} [" + ", ".join(f'{k}="{dot_escape(v)}"' for k, v in attrs.items()) + "];")
    for u, v, d in g.edges(data=True):
        attrs = {}
        label = str(d.get("label", ""))
        if label:
            attrs["label"] = _wrap(label, 28)
        if (u, v) in path_edges:
            steps = ",".join(map(str, path_edges[(u, v)]))
            attrs["label"] = (attrs.get("label", "") + f"\n[step {steps}]").strip()
            attrs["color"] = HIGHLIGHT_COLOUR
            attrs["penwidth"] = "3"
        if covered_edges is not None:
            hit = (u, v) in covered_edges
            attrs.update({"color": COVERED_COLOUR if hit else UNCOVERED_COLOUR, "penwidth": "2" if hit else "3",
                          "style": "solid" if hit else "dashed", "class": "covered" if hit else "uncovered"})
        body = ", ".join(f'{k}="{dot_escape(val)}"' for k, val in attrs.items())
        out.append(f"  {names[u]} -> {names[v]}" + (f" [{body}]" if body else "") + ";")
    if covered_edges is not None:
        out += [
            '  subgraph cluster_legend { label="Legend"; fontsize=10; style="rounded"; color="#999999";',
            '    node [shape=point, width=0.05, style=filled, fillcolor="#999999", label=""];',
            "    lg0; lg1; lg2; lg3;",
            f'    lg0 -> lg1 [color="{COVERED_COLOUR}", penwidth="2", label="covered by an accepted conversation"];',
            f'    lg2 -> lg3 [color="{UNCOVERED_COLOUR}", penwidth="3", style="dashed", label="not covered"];',
            "  }",
        ]
    out.append("}")
    return "\n".join(out) + "\n"


def to_svg(g: nx.DiGraph, highlight_path: list[Any] | None = None,
           covered_edges: set[tuple[Any, Any]] | None = None, rankdir: str = "TB") -> str:
    """SVG markup (from ``<svg`` on, ready to inline in HTML) rendered by Graphviz."""
    size_guard(g.number_of_nodes(), g.number_of_edges())
    return dot_to_svg(to_dot(g, highlight_path, covered_edges, rankdir))


# The review page's graph pane, in points: about as wide as tall (two panes side by side beside
# the verdict column, 1,280-1,920 px screens).
PANE = (460.0, 520.0)
_SIZE = re.compile(r'<svg[^>]*?\bwidth="([\d.]+)pt"[^>]*?\bheight="([\d.]+)pt"')


def svg_size(svg: str) -> tuple[float, float] | None:
    """(width, height) in points of a Graphviz drawing, from its root element."""
    m = _SIZE.search(svg[:600])
    return (float(m.group(1)), float(m.group(2))) if m else None


def fit_scale(size: tuple[float, float] | None, pane: tuple[float, float] = PANE) -> float:
    """The zoom at which a drawing of `size` fits `pane` whole (labels scale with it)."""
    if not size or size[0] <= 0 or size[1] <= 0:
        return 0.0
    return min(pane[0] / size[0], pane[1] / size[1])


def to_svg_readable(g: nx.DiGraph, highlight_path: list[Any] | None = None,
                    pane: tuple[float, float] = PANE) -> tuple[str, str]:
    """(svg, rankdir): the graph drawn top-to-bottom and left-to-right, and the drawing whose
    labels are larger when it is fitted to `pane` kept (ties go to top-to-bottom).

    The shape decides: a wide, shallow graph is wide drawn left-to-right too, so top-to-bottom
    stays; a long chain with few branches drawn top-to-bottom is a thin column that fits only at
    a few pixels a letter, and left-to-right folds it into the pane's width instead. Both layouts
    are drawn rather than guessed from rank counts: labels of different lengths make any estimate
    wrong (the worker draws stored graphs, generation.drawings)."""
    return to_svgs_readable([g], highlight_path, pane)[0]


def to_svgs_readable(graphs: list[nx.DiGraph], highlight_path: list[Any] | None = None,
                     pane: tuple[float, float] = PANE) -> list[tuple[str, str]]:
    """to_svg_readable of each graph, every layout drawn by one `dot` process (dots_to_svgs)."""
    dots = []
    for g in graphs:
        size_guard(g.number_of_nodes(), g.number_of_edges())
        dots.append(to_dot(g, highlight_path))
        if g.number_of_nodes() >= 3:
            dots.append(to_dot(g, highlight_path, rankdir="LR"))
    svgs = iter(dots_to_svgs(dots, draw_timeout() * len(dots)))
    out = []
    for g in graphs:
        tb = next(svgs)
        lr = next(svgs) if g.number_of_nodes() >= 3 else None
        if lr is not None and fit_scale(svg_size(lr), pane) > fit_scale(svg_size(tb), pane) * 1.05:
            out.append((lr, "LR"))
        else:
            out.append((tb, "TB"))
    return out


def dot_to_svg(dot: str, timeout: float | None = None) -> str:
    """SVG markup (from ``<svg`` on) of DOT text, drawn by Graphviz's ``dot`` through the
    ``graphviz`` package, killed after `timeout` seconds (default: draw_timeout()). The worker
    draws graphs ahead of time (generation.drawings, generation.drawing_cache)."""
    return dots_to_svgs([dot], timeout)[0]


_PAGE_GROUP = re.compile(r'<g id="page\d+,\d+_graph0"')


def dots_to_svgs(dots: list[str], timeout: float | None = None) -> list[str]:
    """The SVG markup of each DOT graph, in order, all drawn by one ``dot`` process.

    Starting ``dot`` costs about 12 ms of CPU here, and a review-sized graph's layout about 1 ms,
    so a graph drawn in both directions by a process each spent ~26 ms; one process for both, or
    for a whole import's graphs, spends a start-up once (bench/generation.py --part overhead: the
    worker's drawings share two cores with its LLM stage). ``dot`` writes one SVG document per
    graph it reads; labels are escaped in them, so ``</svg>`` ends exactly one document each.
    """
    if not dots:
        return []
    limit = draw_timeout() if timeout is None else timeout
    try:
        # graphviz.pipe has no timeout: its command and runner, with subprocess.run's timeout.
        proc = execute.run_check(dot_command.command("dot", "svg"), input="\n".join(dots).encode("utf-8"),
                                 capture_output=True, quiet=True, timeout=limit)
        out = proc.stdout.decode("utf-8")
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"dot took longer than {limit:g} s and was stopped (ALMITA_DRAW_TIMEOUT)") from None
    except graphviz.ExecutableNotFound:
        raise GraphvizMissing("Graphviz is not installed: the 'dot' program was not found on PATH. "
                              "Install it (Debian/Ubuntu: apt-get install graphviz) to render SVG.") from None
    except graphviz.CalledProcessError as exc:
        raise RuntimeError(f"dot failed: {str(exc.stderr or exc)[:500]}") from None
    svgs = []
    for part in out.split("</svg>")[:-1]:
        start = part.find("<svg")
        # After its first graph, dot names each top group "page0,1_graph0": the name it has alone.
        svgs.append(_PAGE_GROUP.sub('<g id="graph0"', part[start:] if start >= 0 else part, 1) + "</svg>")
    if len(svgs) != len(dots):
        raise RuntimeError(f"dot drew {len(svgs)} of {len(dots)} graphs")
    return svgs


# --------------------------------------------------------------------------- Mermaid

MERMAID_SHAPES = {
    "start_message": ('(["', '"])'), "end_message": ('(["', '"])'), "message": ('["', '"]'),
    "api": ('[["', '"]]'), "assistant": ('["', '"]'), "user": ('>"', '"]'),
}


def mermaid_escape(text: Any) -> str:
    """Mermaid strings cannot contain raw quotes; entity codes are its own escape syntax (see
    :func:`.mermaid.text.escape`, which the reader undoes exactly)."""
    from .mermaid.text import escape

    return escape(text)


def _mermaid_id(n: Any) -> str:
    s = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in str(n))
    return s if s and not s[0].isdigit() else f"n_{s}"


def to_mermaid(g: nx.DiGraph) -> str:
    """A Mermaid ``flowchart TD``; node types are kept as ``class`` lines so import is lossless."""
    ids = {n: _mermaid_id(n) for n in g}
    lines = ["flowchart TD"]
    for n, d in g.nodes(data=True):
        opening, closing = MERMAID_SHAPES.get(d.get("type", ""), ('["', '"]'))
        lines.append(f"    {ids[n]}{opening}{mermaid_escape(d.get('label', ''))}{closing}")
    for u, v, d in g.edges(data=True):
        label = str(d.get("label", "")).strip()
        arrow = f'-->|"{mermaid_escape(label)}"|' if label else "-->"
        lines.append(f"    {ids[u]} {arrow} {ids[v]}")
    colours = _colours(g)
    for ntype, colour in colours.items():
        lines.append(f"    classDef {ntype} fill:{colour},color:#fff")
    by_type: dict[str, list[str]] = {}
    for n, d in g.nodes(data=True):
        by_type.setdefault(d.get("type", ""), []).append(ids[n])
    for ntype, members in by_type.items():
        if ntype:
            lines.append(f"    class {','.join(members)} {ntype}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- code / outline


def _bfs_order(g: nx.DiGraph) -> list[Any]:
    if len(g) == 0:
        return []
    order = breadth_first(flowgraph_root(g), g.successors)
    seen = set(order)
    return order + [n for n in g if n not in seen]


def to_code(g: nx.DiGraph) -> str:
    """Python-like pseudo-code in FlowBench's style: one function per step, branches as ifs."""
    order = _bfs_order(g)
    fn = {n: f"step_{_mermaid_id(n).lower()}" for n in order}
    out = ['"""Procedure as pseudo-code: say() talks to the customer, call() uses an API."""', ""]
    for n in order:
        d = g.nodes[n]
        ntype, label = d.get("type", ""), str(d.get("label", ""))
        out.append(f"def {fn[n]}():")
        out.append(f"    # {n}: {ntype}" + (f" (noise: {d['noise']})" if d.get("noise") else ""))
        succ = list(g.successors(n))
        if ntype == "api":
            out.append(f"    result = call({label!r})")
            var = "result"
        elif ntype == "user":
            out.append(f"    customer_says({label!r})")
            var = None
        else:
            out.append(f"    say({label!r})")
            var = "reply" if succ else None
            if succ:
                out.append("    reply = listen()")
        if not succ:
            out.append("    return  # end of the conversation" if ntype in ("end_message", "assistant")
                       else "    return")
        elif len(succ) == 1 and not str(g.edges[n, succ[0]].get("label", "")).strip():
            out.append(f"    return {fn[succ[0]]}()")
        else:
            for k, s in enumerate(succ):
                cond = str(g.edges[n, s].get("label", "")).strip()
                kw = "if" if k == 0 else "elif"
                if var and cond:
                    out.append(f"    {kw} matches({var}, {cond!r}):")
                else:
                    out.append(f"    {kw} True:  # unconditional")
                out.append(f"        return {fn[s]}()")
        out.append("")
    if order:
        out.append(f"{fn[order[0]]}()")
    return "\n".join(out) + "\n"


def to_outline(g: nx.DiGraph) -> str:
    """A numbered plain-text procedure, one step per node, branches as indented bullets."""
    order = _bfs_order(g)
    step = {n: i + 1 for i, n in enumerate(order)}
    verbs = {"start_message": "Say", "message": "Say", "end_message": "Finish by saying",
             "assistant": "Say", "user": "The customer says", "api": "Call the API"}
    lines = []
    for n in order:
        d = g.nodes[n]
        ntype = d.get("type", "")
        text = " ".join(str(d.get("label", "")).split())
        lines.append(f"{step[n]}. {verbs.get(ntype, 'Do')}: {text}  [{n}]")
        for s in g.successors(n):
            cond = " ".join(str(g.edges[n, s].get("label", "")).split())
            if ntype == "api" and cond:
                lines.append(f"   - If the result is \"{cond}\": go to step {step[s]}.")
            elif cond:
                lines.append(f"   - If the customer says \"{cond}\": go to step {step[s]}.")
            else:
                lines.append(f"   - Then go to step {step[s]}.")
        if g.out_degree(n) == 0:
            lines.append("   - The conversation ends here.")
    return "\n".join(lines) + "\n"

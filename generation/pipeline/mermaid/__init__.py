"""Mermaid flowchart (FlowBench style) + tool list -> flowgraph.

Two dialects are read (the text itself by :mod:`.syntax`):

* this project's own export (:func:`..render.to_mermaid`): ``class`` lines carry node types, so the
  import is exact;
* FlowBench's hand-written charts: nodes are dialogue states whose text may tell the agent to use a
  tool. Only a *call* makes an api node (the spellings are listed in :mod:`.calls`: "call
  X", "call API:X", "API: X", "call X(...)", "use the X tool", a state whose whole text is the tool,
  ...). A mention of an earlier call's outcome ("based on the returned values of X", "if X returns
  ...", "the result of X") makes none. Tool names match case-insensitively and a differing case is
  reported. A calling state becomes a message node followed by one api node per tool (in the order
  called); the state's outgoing edge labels become the API outcomes. Other states become message
  nodes, states without outgoing edges become end_message nodes, and the parentless state the
  start_message.

Strict by default: any problem the reader found (see :mod:`.syntax`) raises
:class:`MermaidSyntaxError` naming each problem's line and column; ``strict=False`` converts what
could be read and lists the problems in the report. A chart without a single node is refused either
way: there is nothing to convert. Every assumption, every synthetic element that
was inserted and everything dropped is listed in the returned report. A parameter-notes paragraph
after the chart is attached to the descriptions of the parameters it names.
"""
from __future__ import annotations

import re

import networkx as nx

from ..apis import ApiSpec
from ..convert import breadth_first
from .calls import inferred_tools, mentioned_tools, tool_calls, whole_call
from .syntax import DECISION_SHAPES, MermaidProblem, read_mermaid
from ..schema import default_from_text, enum_from_text

__all__ = ["MermaidSyntaxError", "mermaid_to_flowgraph", "parse_mermaid", "tool_calls", "attach_parameter_notes"]


class MermaidSyntaxError(ValueError):
    """Strict reading found problems; ``problems`` holds each one with its 1-based line and column."""

    def __init__(self, problems: list[MermaidProblem]) -> None:
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems[:10])
                         + (f"; and {len(problems) - 10} more" if len(problems) > 10 else ""))


def parse_mermaid(text: str) -> tuple[dict[str, str], dict[str, str], list[tuple[str, str, str]],
                                      dict[str, str], list[str]]:
    """Low-level read: (labels, shapes, edges, class assignments, problems as text)."""
    c = read_mermaid(text)
    return c.labels, c.shapes, c.edges, c.classes, [str(p) for p in c.problems]


_TYPES = {"start_message", "message", "api", "end_message"}


def mermaid_to_flowgraph(text: str, tools: list[ApiSpec], *, strict: bool = True) -> tuple[nx.DiGraph, list[str]]:
    chart = read_mermaid(text)
    if not chart.labels and not chart.edges:
        where = " after its 'flowchart' line" if chart.header_line else ""
        empty = MermaidProblem(chart.header_line or 1, 1, f"the chart is empty: no node or edge{where}")
        raise MermaidSyntaxError([*chart.problems, empty])
    if strict and chart.problems:
        raise MermaidSyntaxError(chart.problems)
    report = [str(p) for p in chart.problems] + chart.remarks
    if chart.notes:
        report += attach_parameter_notes(chart.notes, tools)
    labels, edges, classes = chart.labels, chart.edges, chart.classes
    nodes = list(dict.fromkeys([*labels, *[e[0] for e in edges], *[e[1] for e in edges]]))
    for n in nodes:
        if n not in labels:
            report.append(f"node {n} has no text; its id is used as the text")
            labels[n] = n
    g = nx.DiGraph(kind="flowgraph")
    if nodes and all(classes.get(n) in _TYPES for n in nodes):
        for n in nodes:
            g.add_node(n, type=classes[n], label=labels[n])
        for k, (u, v, label) in enumerate(edges):
            if g.has_edge(u, v):
                report.append(f"edge {u} -> {v} repeats; the first label is kept, {label!r} is not")
                continue
            g.add_edge(u, v, id=f"E{k}", label=label)
        return g, report
    if not tools:
        tools = [ApiSpec(name) for name in inferred_tools("\n".join(labels.values()))]
        report += [f"no tool list was given; the tool {t.name} is taken from the chart's 'API: {t.name}'"
                   for t in tools]
    return _flowbench_to_flowgraph(nodes, labels, chart.shapes, edges, tools, report)


# ----------------------------------------------------------------------------- parameter notes

def _phrases(name: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").strip().lower()
    return list(dict.fromkeys([name.lower(), spaced]))


def attach_parameter_notes(notes: str, tools: list[ApiSpec]) -> list[str]:
    """Append each sentence of the notes to the description of every parameter it names."""
    report: list[str] = []
    body = re.sub(r"^.*?(auxiliary\s+parameter\s+information|parameter\s+information|notes?)\s*[:：]?",
                  "", notes, count=1, flags=re.IGNORECASE | re.DOTALL).strip()
    sentences = [s.strip(" -*•\t") for s in re.split(r"\n+|(?<=[.;。])\s+(?=[A-Z\"'`])", body) if s.strip(" -*•\t")]
    params = [p for t in tools for p in [*t.params, *t.outputs]]
    for sentence in sentences:
        low = sentence.lower()
        matched = [p for p in params
                   if any(re.search(r"(?<![\w])" + re.escape(ph) + r"(?![\w])", low) for ph in _phrases(p.name))]
        if not matched:
            report.append(f"parameter note matches no parameter: {sentence[:120]!r}")
            continue
        for p in matched:
            if sentence not in p.description:
                base = p.description.rstrip()
                p.description = (base + ("" if not base or base[-1] in ".!?;:" else ".") + " " + sentence).strip()
                p.enum = p.enum or enum_from_text(p.description)
                if p.default is None:
                    p.default = default_from_text(p.description)
        names = sorted({p.name for p in matched})
        report.append(f"parameter note attached to {', '.join(names)}: {sentence[:80]!r}")
    return report


def _foldable_decisions(nodes, labels, shapes, succ, tools, root) -> set[str]:
    """Decision nodes (``{...}``) entered only by unlabelled edges from states that call a tool:
    their question is about the call's result, so their branches are the call's outcomes."""
    preds: dict[str, list[tuple[str, str]]] = {n: [] for n in nodes}
    for u in nodes:
        for v, label in succ[u]:
            preds[v].append((u, label))
    out = set()
    for v in nodes:
        if v == root or shapes.get(v) not in DECISION_SHAPES or not succ[v] or not preds[v]:
            continue
        if tool_calls(labels[v], tools) or any(w in preds[v] or w == v for w, _ in succ[v]):
            continue
        if all(not label and len(succ[u]) == 1 and u not in out and tool_calls(labels[u], tools)
               for u, label in preds[v]):
            out.add(v)
    return out


def _flowbench_to_flowgraph(nodes, labels, shapes, edges, tools, report):
    succ: dict[str, list[tuple[str, str]]] = {n: [] for n in nodes}
    indeg = {n: 0 for n in nodes}
    for u, v, label in edges:
        if any(t == v for t, _ in succ[u]):
            report.append(f"edge {u} -> {v} repeats; the first label is kept, {label!r} is not")
            continue
        succ[u].append((v, label))
        indeg[v] += 1
    roots = [n for n in nodes if indeg[n] == 0 and succ[n]] or [n for n in nodes if indeg[n] == 0]
    g = nx.DiGraph(kind="flowgraph")
    if not nodes:
        report.append("no nodes found")
        return g, report
    if len(roots) != 1:
        report.append(f"expected one state without incoming edges, found {len(roots)} "
                      f"({', '.join(roots) or 'none'}); using {roots[0] if roots else nodes[0]}")
    root = roots[0] if roots else nodes[0]
    # Number nodes in breadth-first order from the root so ids read like the paper's.
    order = breadth_first(root, lambda x: (y for y, _ in succ[x]))
    seen = set(order)
    for n in nodes:
        if n not in seen and not succ[n] and not indeg[n]:
            # A state with no transition at all (a stray definition) joins nothing: leave it out.
            report.append(f"state {n} ({labels[n][:40]!r}) has no transition; left out of the flowgraph")
        elif n not in seen:
            report.append(f"state {n} cannot be reached from {root}")
            order.append(n)
    counter = {"n": 0, "e": 0}
    entry: dict[str, str] = {}  # first flowgraph node of a state
    exit_: dict[str, str] = {}  # node whose out-edges carry the state's transitions

    def new_node(ntype: str, label: str, source: str) -> str:
        nid = f"N{counter['n']}"
        counter["n"] += 1
        g.add_node(nid, type=ntype, label=label, source_id=source)
        return nid

    def new_edge(u: str, v: str, label: str) -> None:
        g.add_edge(u, v, id=f"E{counter['e']}", label=label)
        counter["e"] += 1

    folded = _foldable_decisions(nodes, labels, shapes, succ, tools, root)
    used_tools: set[str] = set()
    for n in order:
        if n in folded:
            report.append(f"decision {n} ({labels[n][:40]!r}) follows a call only: its branches became the "
                          "call's outcomes")
            continue
        text = labels[n]
        is_leaf = not succ[n]
        found = tool_calls(text, tools)
        called = [t for t, _ in found]
        for tool, written in found:
            if written != tool:
                report.append(f"state {n} calls {written!r}: matched the tool {tool} (case differs)")
        for name in mentioned_tools(text, tools):
            if name.lower() not in {c.lower() for c in called}:
                report.append(f"state {n} mentions {name} without calling it (e.g. its returned values); "
                              "no API node")
        used_tools.update(called)
        is_call = len(called) == 1 and n != root and whole_call(text, found[0][1])
        if n == root:
            if text.strip().lower() in ("start", "begin", n.lower()):
                report.append(f"start state {n} has no message; inserted the greeting 'Greet the customer'")
                text = "Greet the customer"
            ntype = "start_message"
        elif is_leaf and not called:
            ntype = "end_message"
        else:
            ntype = "message"
        if shapes.get(n) in DECISION_SHAPES and not is_call:
            report.append(f"decision {n} mapped to a message node; its branches are edge labels")
        if is_call:
            first = prev = new_node("api", called[0], n)
            entry[n] = first
        else:
            first = new_node(ntype, text, n)
            entry[n] = exit_[n] = first
            prev = first
            for k, tool in enumerate(called):
                api_node = new_node("api", tool, n)
                if k == 0:
                    new_edge(prev, api_node, "The customer gives the details needed")
                    report.append(f"state {n}: inserted the customer turn 'The customer gives the details "
                                  f"needed' before the call to {tool}")
                else:
                    new_edge(prev, api_node, "Done")
                    report.append(f"state {n} calls {called[k - 1]} then {tool}; joined them with the "
                                  "outcome 'Done'")
                prev = api_node
        exit_[n] = prev
        if called and is_leaf:
            end = new_node("end_message", "Tell the customer the outcome", n)
            new_edge(prev, end, "Done")
            report.append(f"state {n} ends the chart after calling {called[-1]}; inserted the end "
                          "message 'Tell the customer the outcome'")
    for n in order:
        if n in folded:
            continue
        for v, label in succ[n]:
            if v == root and succ[root]:
                # A flowgraph never returns to its greeting: "start over" goes to the first step.
                report.append(f"transition {n} -> {v} returns to the start; it goes to {succ[root][0][0]} instead")
                v = succ[root][0][0]
                if v in folded or exit_.get(n) is None or g.has_edge(exit_[n], entry[v]):
                    report.append(f"transition {n} -> {root} ({label!r}) is dropped: {n} already goes to {v}")
                    continue
            if v in folded:
                question = labels[v].strip().rstrip("?")
                for w, branch in succ[v]:
                    outcome = branch if len(branch.split()) > 2 else f"{question}: {branch or 'Done'}"
                    if not g.has_edge(exit_[n], entry[w]):
                        new_edge(exit_[n], entry[w], outcome)
                    else:
                        report.append(f"branch {v} -> {w} ({branch!r}) is dropped: {n} already goes to {w}")
                continue
            if g.nodes[exit_[n]]["type"] == "api" and not label:
                report.append(f"transition {n} -> {v} after API {g.nodes[exit_[n]]['label']} has no "
                              "outcome label; used 'Done'")
                label = "Done"
            new_edge(exit_[n], entry[v], label)
    for t in tools:
        if t.name not in used_tools:
            report.append(f"tool {t.name} is never called in the chart")
    g.graph["chart"] = {"states": len(nodes), "transitions": len(edges), "labelled": sum(1 for e in edges if e[2]),
                        "calls": sum(1 for _, d in g.nodes(data=True) if d["type"] == "api")}
    return g, report

"""Mermaid flowchart (FlowBench style) + tool list -> flowgraph.

Two dialects are read:

* this project's own export (:func:`.render.to_mermaid`): ``class`` lines carry node types, so the
  import is exact;
* FlowBench's hand-written charts: nodes are dialogue states whose text may say "call <tool>".
  A state that mentions tools becomes a message node followed by one api node per tool (in the
  order mentioned); the state's outgoing edge labels become the API outcomes. Other states become
  message nodes, states without outgoing edges become end_message nodes, and the parentless state
  becomes the start_message. Edge labels leaving messages are user replies.

Everything that had to be assumed or could not be mapped is listed in the returned report.
"""
from __future__ import annotations

import re

import networkx as nx

from .apis import ApiSpec
from .convert import breadth_first

_SHAPES = [("(((", ")))"), ("((", "))"), ("([", "])"), ("[[", "]]"), ("[(", ")]"), ("{{", "}}"),
           ("[/", "/]"), ("[\\", "\\]"), ("[/", "\\]"), ("[\\", "/]"), ("[", "]"), ("(", ")"),
           ("{", "}"), (">", "]")]
_ID = re.compile(r"[A-Za-z0-9_]+")
_ARROWS = [
    re.compile(r"\s*-->\s*\|(?P<label>[^|]*)\|\s*"),
    re.compile(r"\s*--(?![->])\s*(?P<label>[^\n]*?)\s*-->\s*"),
    re.compile(r"\s*==(?![=>])\s*(?P<label>[^\n]*?)\s*==>\s*"),
    re.compile(r"\s*-\.(?P<label>[^\n]*?)\.->\s*"),
    re.compile(r"\s*(?:-->|---|==>|-\.->)\s*(?:\|(?P<label>[^|]*)\|\s*)?"),
]
_ENTITIES = {"#quot;": '"', "#lt;": "<", "#gt;": ">", "#124;": "|", "#amp;": "&"}
_DIRECTIVES = re.compile(r"^\s*(classDef|class|style|linkStyle|click|subgraph|end|direction)\b")


def _unescape(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    for k, v in _ENTITIES.items():
        text = text.replace(k, v)
    return " ".join(text.split())


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text, self.i = text, 0
        self.labels: dict[str, str] = {}
        self.shapes: dict[str, str] = {}
        self.edges: list[tuple[str, str, str]] = []
        self.problems: list[str] = []

    def line_no(self, pos: int | None = None) -> int:
        return self.text.count("\n", 0, self.i if pos is None else pos) + 1

    def skip_space(self, newlines: bool) -> None:
        chars = " \t\r\n;" if newlines else " \t\r"
        while self.i < len(self.text) and self.text[self.i] in chars:
            self.i += 1

    def node(self) -> str | None:
        m = _ID.match(self.text, self.i)
        if not m:
            return None
        node_id = m.group(0)
        self.i = m.end()
        for opening, closing in _SHAPES:
            if self.text.startswith(opening, self.i):
                start = self.i + len(opening)
                if self.text.startswith('"', start):
                    end_quote = self.text.find('"', start + 1)
                    end = self.text.find(closing, end_quote + 1) if end_quote >= 0 else -1
                else:
                    end = self.text.find(closing, start)
                if end < 0:
                    self.problems.append(f"line {self.line_no()}: unterminated text of node {node_id}")
                    self.i = len(self.text)
                    return node_id
                self.labels[node_id] = _unescape(self.text[start:end])
                self.shapes[node_id] = opening
                self.i = end + len(closing)
                break
        return node_id

    def group(self) -> list[str]:
        first = self.node()
        if first is None:
            return []
        members = [first]
        while True:
            save = self.i
            self.skip_space(False)
            if self.text.startswith("&", self.i):
                self.i += 1
                self.skip_space(False)
                nxt = self.node()
                if nxt:
                    members.append(nxt)
                    continue
            self.i = save
            return members

    def arrow(self) -> str | None:
        for pattern in _ARROWS:
            m = pattern.match(self.text, self.i)
            if m:
                self.i = m.end()
                return _unescape(m.group("label") or "")
        return None

    def statement(self) -> None:
        start = self.i
        sources = self.group()
        if not sources:
            end = self.text.find("\n", self.i)
            end = len(self.text) if end < 0 else end
            self.problems.append(f"line {self.line_no()}: could not read {self.text[start:end].strip()[:60]!r}")
            self.i = end
            return
        while True:
            label = self.arrow()
            if label is None:
                return
            targets = self.group()
            if not targets:
                self.problems.append(f"line {self.line_no()}: arrow without a target")
                return
            for s in sources:
                for t in targets:
                    self.edges.append((s, t, label))
            sources = targets


def parse_mermaid(text: str) -> tuple[dict[str, str], dict[str, str], list[tuple[str, str, str]],
                                      dict[str, str], list[str]]:
    """Low-level read: (labels, shapes, edges, class assignments, problems)."""
    classes: dict[str, str] = {}
    body_lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if re.match(r"^(flowchart|graph)\b", stripped) or stripped.startswith("%%") or stripped.startswith("```"):
            body_lines.append("")
            continue
        m = re.match(r"^class\s+([\w,\s]+?)\s+(\w+)\s*;?$", stripped)
        if m:
            for node_id in m.group(1).split(","):
                classes[node_id.strip()] = m.group(2)
            body_lines.append("")
            continue
        body_lines.append("" if _DIRECTIVES.match(stripped) else line)
    sc = _Scanner("\n".join(body_lines))
    while True:
        sc.skip_space(True)
        if sc.i >= len(sc.text):
            break
        sc.statement()
    return sc.labels, sc.shapes, sc.edges, classes, sc.problems


_TYPES = {"start_message", "message", "api", "end_message"}


def mermaid_to_flowgraph(text: str, tools: list[ApiSpec]) -> tuple[nx.DiGraph, list[str]]:
    labels, shapes, edges, classes, report = parse_mermaid(text)
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
    return _flowbench_to_flowgraph(nodes, labels, shapes, edges, tools, report)


def _mentioned_tools(text: str, tools: list[ApiSpec]) -> list[str]:
    hits = []
    for t in tools:
        m = re.search(rf"(?<![\w]){re.escape(t.name)}(?![\w])", text)
        if m:
            hits.append((m.start(), t.name))
    return [name for _, name in sorted(hits)]


def _flowbench_to_flowgraph(nodes, labels, shapes, edges, tools, report):
    succ: dict[str, list[tuple[str, str]]] = {n: [] for n in nodes}
    indeg = {n: 0 for n in nodes}
    for u, v, label in edges:
        if any(t == v for t, _ in succ[u]):
            report.append(f"edge {u} -> {v} repeats; the first label is kept, {label!r} is not")
            continue
        succ[u].append((v, label))
        indeg[v] += 1
    roots = [n for n in nodes if indeg[n] == 0]
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
        if n not in seen:
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

    used_tools: set[str] = set()
    for n in order:
        text = labels[n]
        is_leaf = not succ[n]
        called = _mentioned_tools(text, tools)
        used_tools.update(called)
        if n == root:
            if text.strip().lower() in ("start", "begin", n.lower()):
                report.append(f"start state {n} has no message; used 'Greet the customer'")
                text = "Greet the customer"
            ntype = "start_message"
        elif is_leaf and not called:
            ntype = "end_message"
        else:
            ntype = "message"
        if shapes.get(n) in ("{", "{{"):
            report.append(f"decision {n} mapped to a message node; its branches are edge labels")
        first = new_node(ntype, text, n)
        entry[n] = exit_[n] = first
        prev = first
        for k, tool in enumerate(called):
            api_node = new_node("api", tool, n)
            new_edge(prev, api_node, "The customer gives the details needed" if k == 0 else "Done")
            if k > 0:
                report.append(f"state {n} calls {called[k - 1]} then {tool}; joined them with the "
                              "outcome 'Done'")
            prev = api_node
        exit_[n] = prev
        if called and is_leaf:
            end = new_node("end_message", "Tell the customer the outcome", n)
            new_edge(prev, end, "Done")
            report.append(f"state {n} ends the chart after calling {called[-1]}; added an end "
                          "message 'Tell the customer the outcome'")
    for n in order:
        for v, label in succ[n]:
            if g.nodes[exit_[n]]["type"] == "api" and not label:
                report.append(f"transition {n} -> {v} after API {g.nodes[exit_[n]]['label']} has no "
                              "outcome label; used 'Done'")
                label = "Done"
            new_edge(exit_[n], entry[v], label)
    for t in tools:
        if t.name not in used_tools:
            report.append(f"tool {t.name} is never called in the chart")
    return g, report

"""Graph text formats: the paper's bracket format (A.4/A.5) and a JSON form, both to networkx.

Graphs are ``networkx.DiGraph`` objects:

* ``g.graph["kind"]`` is ``"flowgraph"`` or ``"conversation"``;
* node attributes ``type`` (flowgraph: start_message/message/api/end_message; conversation graph:
  assistant/user/api), ``label`` (the description) and optionally ``noise`` (the noise kind);
* edge attributes ``label`` (may be ``""``) and ``id`` (the edge id as written).

The bracket parser is tolerant in the ways the authors' own examples require: text outside a
``<flow>`` block is ignored, edge ids may repeat (edges are keyed by (source, target)), numbering
may have gaps, cycles are allowed, edges may name nodes defined later, and whitespace is free.
Labels are single-line and stripped, so ``parse(write(g))`` reproduces ``g`` for such labels.
"""
from __future__ import annotations

import re
from typing import Any

import networkx as nx

FLOWGRAPH_TYPES = ("start_message", "message", "api", "end_message")
CONVERSATION_TYPES = ("assistant", "user", "api")


class GraphFormatError(ValueError):
    """A graph document could not be read."""


class GraphParseError(GraphFormatError):
    """A bracket-format line could not be parsed; ``line`` is 1-based (0 = whole document)."""

    def __init__(self, line: int, message: str) -> None:
        self.line = line
        self.message = message
        super().__init__(f"line {line}: {message}")


# [N0](start_message){Greet the customer}   /   [E0](N0, N1){Didn't receive my order}
_LINE = re.compile(r"^\[\s*(?P<id>[^\]]*?)\s*\]\s*\((?P<args>[^)]*)\)\s*\{(?P<label>.*)\}\s*$")
_IGNORABLE = re.compile(r"^(```\w*|<flow>|</flow>|<flowchart>|</flowchart>)$", re.IGNORECASE)


def infer_kind(types: set[str]) -> str:
    """Conversation graphs are the only ones with assistant/user nodes."""
    return "conversation" if types & {"assistant", "user"} else "flowgraph"


def parse_graph_text(text: str, kind: str | None = None) -> nx.DiGraph:
    """Parse the bracket format into a DiGraph; raise :class:`GraphParseError` naming the line."""
    lines = text.splitlines()
    lower = text.lower()
    # Only the content of the <flow> block counts when there is one: LLM replies often add prose.
    start, end = 0, len(lines)
    if "<flow>" in lower:
        for i, line in enumerate(lines):
            if "<flow>" in line.lower():
                start = i
                break
        for i in range(len(lines) - 1, start - 1, -1):
            if "</flow>" in lines[i].lower():
                end = i + 1
                break
    nodes: dict[str, tuple[int, str, str]] = {}
    edges: list[tuple[int, str, str, str, str]] = []
    for lineno in range(start + 1, end + 1):
        raw = lines[lineno - 1]
        line = raw.strip()
        if "<flow>" in line.lower():
            line = re.sub(r"(?i)<flow>", "", line).strip()
        if "</flow>" in line.lower():
            line = re.sub(r"(?i)</flow>", "", line).strip()
        if not line or _IGNORABLE.match(line):
            continue
        m = _LINE.match(line)
        if not m:
            raise GraphParseError(lineno, f"expected '[id](type){{description}}' or "
                                          f"'[id](source, target){{description}}', got {line[:60]!r}")
        item_id, args, label = m.group("id"), m.group("args"), m.group("label").strip()
        if not item_id:
            raise GraphParseError(lineno, "empty id in brackets")
        parts = [a.strip() for a in args.split(",")]
        if len(parts) == 1:
            ntype = parts[0].lower()
            if not ntype:
                raise GraphParseError(lineno, f"node {item_id} has an empty type")
            if item_id in nodes:
                raise GraphParseError(lineno, f"node {item_id} is defined twice "
                                              f"(first on line {nodes[item_id][0]})")
            nodes[item_id] = (lineno, ntype, label)
        elif len(parts) == 2 and all(parts):
            edges.append((lineno, item_id, parts[0], parts[1], label))
        else:
            raise GraphParseError(lineno, f"cannot read {args!r}: a node has one type, "
                                          "an edge has '(source, target)'")
    g = nx.DiGraph()
    for node_id, (_, ntype, label) in nodes.items():
        g.add_node(node_id, type=ntype, label=label)
    duplicates = []
    for lineno, edge_id, src, dst, label in edges:
        for end_id in (src, dst):
            if end_id not in nodes:
                raise GraphParseError(lineno, f"edge {edge_id} refers to undefined node {end_id}")
        if g.has_edge(src, dst):
            # The first definition wins; the repeat is kept on record rather than dropped silently.
            duplicates.append(f"line {lineno}: edge {edge_id} repeats ({src}, {dst})")
            continue
        g.add_edge(src, dst, id=edge_id, label=label)
    if duplicates:
        g.graph["warnings"] = duplicates
    g.graph["kind"] = kind or infer_kind({d["type"] for _, d in g.nodes(data=True)})
    return g


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def write_graph_text(g: nx.DiGraph) -> str:
    """Write the bracket format inside ``<flow>``; nodes first, then edges, in graph order.

    Edges without an ``id`` get fresh ``E<n>`` ids. Newlines in labels become spaces because the
    format is line-based. Noise kinds are not representable here (use the JSON form).
    """
    out = ["<flow>"]
    for node, data in g.nodes(data=True):
        out.append(f"[{node}]({data.get('type', '')}){{{_one_line(data.get('label', ''))}}}")
    used = {str(d["id"]) for _, _, d in g.edges(data=True) if d.get("id")}
    counter = 0
    for u, v, data in g.edges(data=True):
        edge_id = data.get("id")
        if not edge_id:
            while f"E{counter}" in used:
                counter += 1
            edge_id = f"E{counter}"
            used.add(edge_id)
        out.append(f"[{edge_id}]({u}, {v}){{{_one_line(data.get('label', ''))}}}")
    out.append("</flow>")
    return "\n".join(out) + "\n"


def graph_to_json(g: nx.DiGraph) -> dict[str, Any]:
    nodes = []
    for node, data in g.nodes(data=True):
        item = {"id": str(node), "type": data.get("type", ""), "label": data.get("label", "")}
        if data.get("noise"):
            item["noise"] = data["noise"]
        nodes.append(item)
    edges = [
        {"id": data.get("id", ""), "source": str(u), "target": str(v), "label": data.get("label", "")}
        for u, v, data in g.edges(data=True)
    ]
    kind = g.graph.get("kind") or infer_kind({n["type"] for n in nodes})
    return {"kind": kind, "nodes": nodes, "edges": edges}


def graph_from_json(data: Any) -> nx.DiGraph:
    """Inverse of :func:`graph_to_json`; raise :class:`GraphFormatError` naming the bad item."""
    if not isinstance(data, dict):
        raise GraphFormatError("expected an object with 'nodes' and 'edges'")
    nodes, edges = data.get("nodes"), data.get("edges", [])
    if not isinstance(nodes, list) or not isinstance(edges, list):
        raise GraphFormatError("'nodes' and 'edges' must be lists")
    g = nx.DiGraph()
    for i, n in enumerate(nodes):
        if not isinstance(n, dict) or not isinstance(n.get("id"), str) or not n["id"]:
            raise GraphFormatError(f"nodes[{i}]: missing string 'id'")
        if n["id"] in g:
            raise GraphFormatError(f"nodes[{i}]: node {n['id']} is defined twice")
        attrs = {"type": str(n.get("type", "")), "label": str(n.get("label", ""))}
        if n.get("noise"):
            attrs["noise"] = str(n["noise"])
        g.add_node(n["id"], **attrs)
    for i, e in enumerate(edges):
        if not isinstance(e, dict):
            raise GraphFormatError(f"edges[{i}]: expected an object")
        for key in ("source", "target"):
            if e.get(key) not in g:
                raise GraphFormatError(f"edges[{i}]: {key} {e.get(key)!r} is not a node")
        if g.has_edge(e["source"], e["target"]):
            raise GraphFormatError(f"edges[{i}]: duplicate edge ({e['source']}, {e['target']})")
        g.add_edge(e["source"], e["target"], id=str(e.get("id", "")), label=str(e.get("label", "")))
    kind = data.get("kind")
    if kind not in (None, "flowgraph", "conversation"):
        raise GraphFormatError(f"unknown kind {kind!r}")
    g.graph["kind"] = kind or infer_kind({d["type"] for _, d in g.nodes(data=True)})
    return g


def load_graph(text: str, kind: str | None = None) -> nx.DiGraph:
    """Read a graph document in any supported form: JSON, bracket text, or a DOT workflow."""
    import json

    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise GraphParseError(exc.lineno, f"invalid JSON: {exc.msg}") from exc
        g = graph_from_json(data)
        if kind:
            g.graph["kind"] = kind
        return g
    if re.match(r"(strict\s+)?digraph\b", stripped, re.IGNORECASE):
        return parse_dot_workflow(text)
    return parse_graph_text(text, kind)


def parse_dot_workflow(text: str) -> nx.DiGraph:
    """Flowgraph from a Graphviz workflow chart (tau2-bench style); see :mod:`.importers`."""
    from .importers import dot_workflow_to_flowgraph

    return dot_workflow_to_flowgraph(text)[0]

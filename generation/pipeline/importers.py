"""Importers for third-party workflow formats: Graphviz workflow charts and STAR task flows.

Both return ``(flowgraph, report)``; the report lists every assumption and everything dropped.
"""
from __future__ import annotations

import re
from typing import Any

import networkx as nx

from .apis import ApiSpec
from .convert import breadth_first

# ----------------------------------------------------------------------------- DOT workflows

_ATTR = re.compile(r'(\w+)\s*=\s*("(?:[^"\\]|\\.)*"|[^,\]\s;]+)')
_NODE_STMT = re.compile(r"^(\w+)\s*(?:\[(?P<attrs>.*)\])?\s*;?$")
_EDGE_STMT = re.compile(r"^(?P<chain>\w+(?:\s*->\s*\w+)+)\s*(?:\[(?P<attrs>.*)\])?\s*;?$")
_SKIP = re.compile(r"^((strict\s+)?digraph\b.*\{|\}|(node|edge|graph)\s*\[.*\]\s*;?|\w+\s*=\s*[^\[]*;?|\{|subgraph\b.*)$")


def _attrs(text: str | None) -> dict[str, str]:
    out = {}
    for key, value in _ATTR.findall(text or ""):
        if value.startswith('"'):
            value = value[1:-1].replace('\\"', '"').replace("\\n", " ").replace("\\l", " ")
        out[key] = " ".join(value.split())
    return out


def read_dot(text: str) -> tuple[dict[str, dict[str, str]], list[tuple[str, str, dict[str, str]]], list[str]]:
    """Nodes (id -> attrs), edges and unreadable lines of a simple one-statement-per-line DOT file."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
    nodes: dict[str, dict[str, str]] = {}
    edges: list[tuple[str, str, dict[str, str]]] = []
    problems = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"^\s*(//|#).*$", "", raw).strip()
        line = re.sub(r"\s//[^\"]*$", "", line).strip()
        if not line or _SKIP.match(line):
            continue
        m = _EDGE_STMT.match(line)
        if m:
            chain = [x.strip() for x in m.group("chain").split("->")]
            attrs = _attrs(m.group("attrs"))
            for u, v in zip(chain, chain[1:]):
                nodes.setdefault(u, {})
                nodes.setdefault(v, {})
                edges.append((u, v, attrs))
            continue
        m = _NODE_STMT.match(line)
        if m:
            nodes.setdefault(m.group(1), {}).update(_attrs(m.group("attrs")))
            continue
        problems.append(f"line {lineno}: could not read {line[:60]!r}")
    return nodes, edges, problems


def dot_workflow_to_flowgraph(text: str) -> tuple[nx.DiGraph, list[str]]:
    """Flowgraph from a DOT workflow chart (tau2-bench's telecom workflows are the model).

    Diamond nodes are decisions: they are folded into the edges that enter them, so an edge into
    "Airplane Mode ON?" followed by the "Yes" branch becomes one edge labelled
    "Airplane Mode ON? Yes". The parentless node is the start_message, nodes without outgoing
    edges are end_messages, and every other node is a message (DOT charts do not mark API calls).
    """
    nodes, edges, report = read_dot(text)
    succ: dict[str, list[tuple[str, str]]] = {n: [] for n in nodes}
    for u, v, attrs in edges:
        succ[u].append((v, attrs.get("label", "")))
    decision = {n for n, a in nodes.items() if a.get("shape") == "diamond"}
    label_of = {n: a.get("label", n) for n, a in nodes.items()}

    def expand(src_label: str, target: str, seen: frozenset) -> list[tuple[str, str]]:
        if target not in decision:
            return [(target, src_label)]
        if target in seen:
            report.append(f"decisions loop through {target}; that branch is dropped")
            return []
        out = []
        question = label_of[target]
        for z, branch in succ[target]:
            lab = " ".join(x for x in (src_label, question, branch) if x)
            out += expand(lab, z, seen | {target})
        if not succ[target]:
            report.append(f"decision {target} has no branches")
        return out

    kept = [n for n in nodes if n not in decision]
    indeg = {n: 0 for n in kept}
    folded: dict[str, list[tuple[str, str]]] = {}
    for n in kept:
        folded[n] = []
        for v, lab in succ[n]:
            for z, full in expand(lab, v, frozenset()):
                existing = next((i for i, (t, _) in enumerate(folded[n]) if t == z), None)
                if existing is None:
                    folded[n].append((z, full))
                    indeg[z] += 1
                else:
                    t, old = folded[n][existing]
                    folded[n][existing] = (t, f"{old} / {full}" if full and full != old else old)
    roots = [n for n in kept if indeg[n] == 0]
    if not roots:
        report.append("no start node found")
        return nx.DiGraph(kind="flowgraph"), report
    if len(roots) > 1:
        report.append(f"several nodes without a parent ({', '.join(roots)}); {roots[0]} is the start")
    root = roots[0]
    order = breadth_first(root, lambda x: (y for y, _ in folded[x]))
    seen = set(order)
    for n in kept:
        if n not in seen:
            report.append(f"node {n} is not reachable from {root}; dropped")
    ids = {n: f"N{i}" for i, n in enumerate(order)}
    g = nx.DiGraph(kind="flowgraph")
    for n in order:
        ntype = "start_message" if n == root else ("end_message" if not folded[n] else "message")
        g.add_node(ids[n], type=ntype, label=label_of[n] or n, source_id=n)
    k = 0
    for n in order:
        for z, lab in folded[n]:
            if z == root:
                report.append(f"edge {n} -> {z} returns to the start; dropped")
                continue
            g.add_edge(ids[n], ids[z], id=f"E{k}", label=lab)
            k += 1
    return g, report


# ----------------------------------------------------------------------------- STAR task flows

_API_OUTCOMES = {"available": ("query_check", "query", "query_book"),
                 "unavailable": ("query_check", "query", "query_book"),
                 "query_success": ("query_book", "query", "query_check"),
                 "query_failure": ("query_book", "query", "query_check")}
USER_REPLY = "The user answers"


def _humanise(key: str) -> str:
    return key.replace("_", " ").strip().capitalize()


def star_task_to_flowgraph(task: dict[str, Any], api: ApiSpec | None = None) -> tuple[nx.DiGraph, list[str]]:
    """Flowgraph from a STAR task (``{"task", "replies", "graph"}``) and its API.

    STAR's graph maps an action to the next action, and uses event keys (``yes``/``no``,
    ``available``, ``query_success``...) whose source action is implicit. API outcome events are
    attached to the matching query node; yes/no are attached to the questions that otherwise have
    no way forward. Events whose source cannot be inferred (e.g. ``info_missing``) and the nodes
    only they lead to are reported and dropped.
    """
    report: list[str] = []
    flow: dict[str, str] = task.get("graph", {})
    replies: dict[str, str] = task.get("replies", {})
    targets = set(flow.values())
    events = {k for k in flow if k not in targets and k != "hello"}
    actions = list(dict.fromkeys([k for k in flow if k not in events] + list(targets)))
    api_name = api.name if api else task.get("task", "query")
    is_api = {a: a.startswith("query") for a in actions}
    edges: list[tuple[str, str, str]] = []
    for k, v in flow.items():
        if k in events:
            continue
        label = ("Results found" if is_api[k] else USER_REPLY)
        edges.append((k, v, label))
    out_of = {a: [e for e in edges if e[0] == a] for a in actions}
    for ev in sorted(events):
        target = flow[ev]
        text = replies.get(ev, _humanise(ev))
        if ev in _API_OUTCOMES:
            source = next((q for q in _API_OUTCOMES[ev] if q in is_api and is_api[q]), None)
            if source is None:
                report.append(f"event {ev}: no query node to attach it to; dropped")
                continue
            if any(e[2] == "Results found" for e in out_of[source]):
                # An explicit outcome replaces the generic "results found" continuation.
                edges = [e for e in edges if not (e[0] == source and e[2] == "Results found")]
            edges.append((source, target, text if text != "Query" else _humanise(ev)))
            report.append(f"event {ev}: attached to {source} as outcome {edges[-1][2]!r}")
        elif ev in ("yes", "no"):
            sources = [a for a in actions if not is_api[a] and a != "anything_else"
                       and not any(e[0] == a for e in edges) and replies.get(a, "").rstrip().endswith("?")]
            if not sources:
                report.append(f"event {ev}: no open question to attach it to; dropped")
            for s in sources:
                edges.append((s, target, "Yes" if ev == "yes" else "No"))
            if sources:
                report.append(f"event {ev}: attached to {', '.join(sources)}")
        else:
            report.append(f"event {ev}: its source action is not stated in the task; dropped")
    g0 = nx.DiGraph()
    for a in actions:
        g0.add_node(a)
    for u, v, lab in edges:
        if not g0.has_edge(u, v):
            g0.add_edge(u, v, label=lab)
    root = "hello" if "hello" in g0 else actions[0]
    order = breadth_first(root, g0.successors)
    seen = set(order)
    for a in actions:
        if a not in seen:
            report.append(f"action {a} is not reachable from {root}; dropped")
    ids = {a: f"N{i}" for i, a in enumerate(order)}
    g = nx.DiGraph(kind="flowgraph")
    for a in order:
        if is_api[a]:
            ntype, label = "api", api_name
        elif a == root:
            ntype, label = "start_message", replies.get(a, _humanise(a))
        else:
            has_out = any(y in ids and y != root for y in g0.successors(a))
            ntype, label = ("message" if has_out else "end_message"), replies.get(a, _humanise(a))
        g.add_node(ids[a], type=ntype, label=label, source_id=a)
    k = 0
    for u in order:
        for v in g0.successors(u):
            if v in ids and v != root:
                g.add_edge(ids[u], ids[v], id=f"E{k}", label=g0.edges[u, v]["label"])
                k += 1
    for a in order:
        if is_api[a] and g.out_degree(ids[a]) == 0:
            end = f"N{len(g)}"
            g.add_node(end, type="end_message", label="Tell the user the result", source_id=a)
            g.add_edge(ids[a], end, id=f"E{k}", label="Results found")
            k += 1
            report.append(f"query {a} had no continuation; added an end message")
    return g, report

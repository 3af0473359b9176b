"""Deterministic flowgraph -> conversation graph conversion (paper §3.5 without the LLM).

The mapping follows the A.5 one-shot example:

* start_message, message and end_message nodes become assistant nodes (end messages are leaves);
* api nodes stay api nodes, and the labels of their out-edges (API outcomes) stay edge labels;
* the label of every edge leaving a message node becomes a user node between the two nodes, so the
  customer's reply is a turn of its own. An unlabelled message edge gets :data:`DEFAULT_USER_REPLY`
  because a conversation graph cannot have assistant -> assistant/api edges.

Node ids are assigned in breadth-first order from the root, following out-edges in graph order,
so the same flowgraph always yields the same conversation graph.
"""
from __future__ import annotations

from collections import deque

import networkx as nx

DEFAULT_USER_REPLY = "The customer answers the question"
_MESSAGE_TYPES = ("start_message", "message", "end_message")


def flowgraph_root(g: nx.DiGraph):
    for n, d in g.nodes(data=True):
        if d.get("type") == "start_message":
            return n
    for n in g:
        if g.in_degree(n) == 0:
            return n
    return next(iter(g), None)


def breadth_first(root, successors) -> list:
    """The nodes reachable from `root`, in breadth-first order; `successors(x)` gives x's children."""
    order, seen, queue = [], {root}, deque([root])
    while queue:
        x = queue.popleft()
        order.append(x)
        for y in successors(x):
            if y not in seen:
                seen.add(y)
                queue.append(y)
    return order


def flowgraph_to_conversation_graph(g: nx.DiGraph) -> nx.DiGraph:
    cg = nx.DiGraph(kind="conversation")
    if len(g) == 0:
        return cg
    order: list = []
    seen = set()
    root = flowgraph_root(g)
    queue = deque([root])
    seen.add(root)
    # Unreachable nodes are still converted (after the reachable part) so nothing is lost; the
    # validators report them.
    rest = [n for n in g if n != root]
    while queue or rest:
        if not queue:
            n = rest.pop(0)
            if n in seen:
                continue
            seen.add(n)
            queue.append(n)
        x = queue.popleft()
        order.append(x)
        for y in g.successors(x):
            if y not in seen:
                seen.add(y)
                queue.append(y)
    new_id: dict = {}
    counter = {"node": 0, "edge": 0}

    def node_for(x) -> str:
        if x not in new_id:
            nid = f"N{counter['node']}"
            counter["node"] += 1
            data = g.nodes[x]
            ntype = "api" if data.get("type") == "api" else "assistant"
            cg.add_node(nid, type=ntype, label=str(data.get("label", "")))
            if data.get("noise"):
                cg.nodes[nid]["noise"] = data["noise"]
            new_id[x] = nid
        return new_id[x]

    def add_edge(a: str, b: str, label: str = "") -> None:
        cg.add_edge(a, b, id=f"E{counter['edge']}", label=label)
        counter["edge"] += 1

    for x in order:
        xid = node_for(x)
        is_api = g.nodes[x].get("type") == "api"
        for y in g.successors(x):
            label = str(g.edges[x, y].get("label", "")).strip()
            if is_api:
                add_edge(xid, node_for(y), label)
            else:
                uid = f"N{counter['node']}"
                counter["node"] += 1
                cg.add_node(uid, type="user", label=label or DEFAULT_USER_REPLY)
                add_edge(xid, uid)
                add_edge(uid, node_for(y))
    return cg

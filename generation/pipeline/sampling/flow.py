"""The minimum-flow lower bound on covering walks, and the coverage of a set of paths."""
from __future__ import annotations

from typing import Any

import networkx as nx

from ..convert import flowgraph_root
from .index import _Index


def _coverable_edges(ix: _Index) -> list[tuple[int, int]]:
    reach = ix.reachable()
    ok = ix.ok(frozenset())
    return [(u, v) for u in sorted(reach) for v in ix.children[u] if ok[v] and ok[u]]


def _min_flow(ix: _Index, edges: list[tuple[int, int]], support: list[tuple[int, int]] | None = None
              ) -> tuple[int, dict[tuple[int, int], int]]:
    """Minimum root->leaves flow with at least one unit on every edge of ``edges`` (lower bounds via
    demands), travelling on the edges of ``support`` (default: ``edges`` themselves; the target-edge
    sampler passes every coverable edge, so walks may pass through edges it does not need)."""
    if not edges:
        return (1 if ix.leaf[ix.root] and support is None else 0), {}
    sup = edges if support is None else support
    sink = -1
    h = nx.DiGraph()
    demand: dict[int, int] = {}
    for u, v in sup:
        h.add_edge(u, v, weight=1)
    for u, v in edges:
        demand[u] = demand.get(u, 0) + 1  # one unit must leave u ...
        demand[v] = demand.get(v, 0) - 1  # ... and arrive at v
    nodes_in = {u for e in sup for u in e}
    for x in nodes_in:
        if ix.leaf[x]:
            h.add_edge(x, sink, weight=0)
    # Each unit on sink -> root is one path; make it dominate the cost so the flow minimises paths
    # first and total edge traversals second (fewer redundant loops). With a support wider than
    # the demanded edges a path may need more traversals, hence the larger weight there.
    weight = len(edges) * 4 + 10 if support is None else (len(sup) + 2) ** 2
    h.add_edge(sink, ix.root, weight=weight)
    for x in h.nodes:
        h.nodes[x]["demand"] = demand.get(x, 0)
    flow = nx.min_cost_flow(h)
    need = set(edges)
    f = {(u, v): (1 if (u, v) in need else 0) + flow[u][v] for u, v in sup}
    return flow[sink][ix.root], f


def min_edge_cover_lower_bound(g: nx.DiGraph) -> int:
    """Minimum number of root-to-leaf walks covering every coverable edge, loops unbounded.

    Exact for acyclic graphs; a valid lower bound for any loop bound otherwise.
    """
    ix = _Index(g)
    return _min_flow(ix, _coverable_edges(ix))[0]


def coverage(g: nx.DiGraph, paths: list[list[Any]]) -> dict[str, Any]:
    """Share of nodes and edges reachable from the root that the paths visit."""
    if len(g) == 0:
        return {"node_coverage": 0.0, "edge_coverage": 0.0, "nodes": 0, "edges": 0,
                "covered_nodes": 0, "covered_edges": 0}
    root = flowgraph_root(g)
    nodes = nx.descendants(g, root) | {root}
    edges = {(u, v) for u, v in g.edges if u in nodes}
    seen_nodes = {n for p in paths for n in p} & nodes
    seen_edges = {(p[k], p[k + 1]) for p in paths for k in range(len(p) - 1)} & edges
    return {
        "node_coverage": len(seen_nodes) / len(nodes),
        "edge_coverage": (len(seen_edges) / len(edges)) if edges else 1.0,
        "nodes": len(nodes),
        "edges": len(edges),
        "covered_nodes": len(seen_nodes),
        "covered_edges": len(seen_edges),
    }

"""Coverage of a conversation graph by a set of paths (the accepted conversations' paths), and the
gaps left: pure, no Django.

The denominators are what a root-to-leaf path can take: the nodes and edges reachable from the
root from which a leaf stays reachable. Noise branches (nodes the noise step added, marked with
their kind) are reported one by one and per kind.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import networkx as nx

from .convert import flowgraph_root
from .sampling import coverable_edges


@dataclass
class GraphCoverage:
    nodes: list[Any]
    edges: list[tuple[Any, Any]]
    covered_nodes: list[Any]
    covered_edges: list[tuple[Any, Any]]
    noise: list[dict[str, Any]] = field(default_factory=list)  # {"node", "kind", "covered"}
    paths: int = 0

    @property
    def uncovered_nodes(self) -> list[Any]:
        seen = set(self.covered_nodes)
        return [n for n in self.nodes if n not in seen]

    @property
    def uncovered_edges(self) -> list[tuple[Any, Any]]:
        seen = set(self.covered_edges)
        return [e for e in self.edges if e not in seen]

    @property
    def node_coverage(self) -> float:
        return len(self.covered_nodes) / len(self.nodes) if self.nodes else 1.0

    @property
    def edge_coverage(self) -> float:
        return len(self.covered_edges) / len(self.edges) if self.edges else 1.0

    def noise_by_kind(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for b in self.noise:
            row = out.setdefault(b["kind"], {"covered": 0, "total": 0})
            row["total"] += 1
            row["covered"] += int(b["covered"])
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "paths": self.paths,
            "nodes": len(self.nodes), "covered_nodes": len(self.covered_nodes),
            "edges": len(self.edges), "covered_edges": len(self.covered_edges),
            "node_coverage": round(self.node_coverage, 6), "edge_coverage": round(self.edge_coverage, 6),
            "uncovered_nodes": [str(n) for n in self.uncovered_nodes],
            "uncovered_edges": [[str(u), str(v)] for u, v in self.uncovered_edges],
            "noise": [{"node": str(b["node"]), "kind": b["kind"], "covered": b["covered"]} for b in self.noise],
            "noise_by_kind": self.noise_by_kind(),
        }


def graph_coverage(g: nx.DiGraph, paths: Iterable[list[Any]]) -> GraphCoverage:
    """Which coverable nodes and edges of ``g`` the ``paths`` take (paths may be from an older
    version of the graph: steps that are not edges of ``g`` are ignored)."""
    paths = [list(p) for p in paths]
    edges = coverable_edges(g) if len(g) else []
    root = flowgraph_root(g) if len(g) else None
    nodes = list(dict.fromkeys(([root] if root is not None else []) + [x for e in edges for x in e]))
    edge_set, node_set = set(edges), set(nodes)
    took_edges = {(a, b) for p in paths for a, b in zip(p, p[1:])} & edge_set
    took_nodes = {x for p in paths for x in p} & node_set
    noise = [{"node": n, "kind": str(d["noise"]), "covered": n in took_nodes}
             for n, d in g.nodes(data=True) if d.get("noise") and n in node_set]
    return GraphCoverage(nodes=nodes, edges=edges, covered_nodes=[n for n in nodes if n in took_nodes],
                         covered_edges=[e for e in edges if e in took_edges], noise=noise, paths=len(paths))


def summarise(coverages: Iterable[GraphCoverage]) -> dict[str, Any]:
    """Totals over several graphs: covered / total nodes and edges, and fully covered graphs."""
    rows = list(coverages)
    n = sum(len(c.nodes) for c in rows)
    e = sum(len(c.edges) for c in rows)
    cn = sum(len(c.covered_nodes) for c in rows)
    ce = sum(len(c.covered_edges) for c in rows)
    noise = [b for c in rows for b in c.noise]
    return {
        "graphs": len(rows), "fully_covered_graphs": sum(1 for c in rows if not c.uncovered_edges),
        "nodes": n, "covered_nodes": cn, "node_coverage": round(cn / n, 6) if n else 1.0,
        "edges": e, "covered_edges": ce, "edge_coverage": round(ce / e, 6) if e else 1.0,
        "noise_branches": len(noise), "covered_noise_branches": sum(1 for b in noise if b["covered"]),
    }

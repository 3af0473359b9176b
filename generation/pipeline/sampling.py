"""Path samplers (paper §3.7): Algorithm 1, a plain random walk, and an edge-coverage sampler.

All samplers are deterministic for a given seed and return root-to-leaf node-id lists.

Loop bound: a node may occur at most ``max_loops + 1`` times in one path, so a path goes round a
cycle at most ``max_loops`` times. A walk never steps onto a node from which no leaf can be reached
without exceeding that bound, so every path ends at a leaf and the bound is never broken.

Algorithm 1 (weighted random walk): weights start at 1, a chosen node's weight grows by one per
visit across all paths, and the next node is drawn among the eligible children with probability
proportional to 1 / weight.

Coverage sampler: covers every edge that lies on some root-to-leaf walk with as few paths as
possible. The lower bound is the value of a minimum flow with a demand of 1 on every such edge
(any covering set of walks is such a flow); for graphs without cycles it is the exact minimum. The
sampler decomposes that minimum flow into walks and splices leftover cycles into walks with room
under the loop bound, so it meets the bound unless the loop bound forces extra paths.
``n`` is treated as a minimum: the covering paths are always all returned, and when ``n`` is
larger the list is padded with Algorithm 1 paths (seeded) up to ``n``.
"""
from __future__ import annotations

import random
from collections import deque
from typing import Any, Callable

import networkx as nx

from .convert import flowgraph_root

SAMPLERS = ("algorithm1", "random", "coverage")


class SamplingError(ValueError):
    pass


class _Index:
    """Integer view of a graph, so the inner loops avoid networkx attribute lookups."""

    def __init__(self, g: nx.DiGraph) -> None:
        if len(g) == 0:
            raise SamplingError("cannot sample paths from an empty graph")
        self.nodes = list(g.nodes)
        self.pos = {n: i for i, n in enumerate(self.nodes)}
        self.children = [tuple(self.pos[c] for c in g.successors(n)) for n in self.nodes]
        self.parents = [tuple(self.pos[p] for p in g.predecessors(n)) for n in self.nodes]
        self.root = self.pos[flowgraph_root(g)]
        self.leaf = [not ch for ch in self.children]
        self._ok_cache: dict[frozenset, bytearray] = {}

    def ok(self, blocked: frozenset) -> bytearray:
        """Nodes from which a leaf is reachable without passing through ``blocked`` nodes."""
        cached = self._ok_cache.get(blocked)
        if cached is not None:
            return cached
        ok = bytearray(len(self.nodes))
        stack = [i for i, is_leaf in enumerate(self.leaf) if is_leaf and i not in blocked]
        for i in stack:
            ok[i] = 1
        while stack:
            i = stack.pop()
            for p in self.parents[i]:
                if not ok[p] and p not in blocked:
                    ok[p] = 1
                    stack.append(p)
        if len(self._ok_cache) > 4096:  # bounded: cap sets vary a lot on large cyclic graphs
            self._ok_cache.clear()
        self._ok_cache[blocked] = ok
        return ok

    def reachable(self) -> set[int]:
        seen = {self.root}
        stack = [self.root]
        while stack:
            for c in self.children[stack.pop()]:
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        return seen


def _walk(ix: _Index, cap: int, choose: Callable[[list[int]], int],
          free_children: list[list[int]]) -> list[int]:
    empty: frozenset = frozenset()
    counts = {ix.root: 1}
    blocked = frozenset([ix.root]) if cap <= 1 else empty
    ok = ix.ok(blocked)
    u = ix.root
    path = [u]
    while not ix.leaf[u]:
        if blocked:
            eligible = [v for v in ix.children[u] if ok[v] and v not in blocked]
        else:
            eligible = free_children[u]
        v = choose(eligible)
        path.append(v)
        c = counts.get(v, 0) + 1
        counts[v] = c
        if c >= cap:
            blocked = blocked | {v}
            ok = ix.ok(blocked)
        u = v
    return path


def _walker(ix: _Index, sampler: str, seed: int, max_loops: int):
    if max_loops < 0:
        raise SamplingError("max_loops must be >= 0")
    if not ix.ok(frozenset())[ix.root]:
        raise SamplingError("no leaf is reachable from the root")
    cap = max_loops + 1
    rng = random.Random(seed)
    ok0 = ix.ok(frozenset())
    free_children = [[v for v in ch if ok0[v]] for ch in ix.children]
    if sampler == "random":
        rand = rng.random

        def choose(eligible: list[int]) -> int:
            return eligible[int(rand() * len(eligible))]

        return lambda: _walk(ix, cap, choose, free_children)
    if sampler != "algorithm1":
        raise SamplingError(f"unknown sampler {sampler!r}; expected one of {', '.join(SAMPLERS)}")
    weights = [1] * len(ix.nodes)
    rand = rng.random

    def choose_weighted(eligible: list[int]) -> int:
        if len(eligible) == 1:
            v = eligible[0]
        else:
            total = 0.0
            for c in eligible:
                total += 1.0 / weights[c]
            r = rand() * total
            v = eligible[-1]
            for c in eligible:
                r -= 1.0 / weights[c]
                if r < 0:
                    v = c
                    break
        weights[v] += 1  # Algorithm 1, line 9: the weight is visits + 1
        return v

    def walk() -> list[int]:
        weights[ix.root] += 1
        return _walk(ix, cap, choose_weighted, free_children)

    return walk


def sample_paths(g: nx.DiGraph, n: int, sampler: str = "algorithm1", seed: int = 0,
                 max_loops: int = 1) -> list[list[str]]:
    """Sample root-to-leaf paths; see the module docstring for each sampler's semantics."""
    ix = _Index(g)
    if sampler == "coverage":
        paths = _coverage_paths(ix, max_loops)
        if n > len(paths):
            walk = _walker(ix, "algorithm1", seed, max_loops)
            paths += [walk() for _ in range(n - len(paths))]
    else:
        walk = _walker(ix, sampler, seed, max_loops)
        paths = [walk() for _ in range(n)]
    return [[ix.nodes[i] for i in p] for p in paths]


def sample_index_paths(g: nx.DiGraph, n: int, sampler: str = "algorithm1", seed: int = 0,
                       max_loops: int = 1) -> list[list[int]]:
    """Like :func:`sample_paths` but with node positions; used by the benchmark."""
    ix = _Index(g)
    walk = _walker(ix, sampler, seed, max_loops)
    return [walk() for _ in range(n)]


# --------------------------------------------------------------------------- coverage


def _coverable_edges(ix: _Index) -> list[tuple[int, int]]:
    reach = ix.reachable()
    ok = ix.ok(frozenset())
    return [(u, v) for u in sorted(reach) for v in ix.children[u] if ok[v] and ok[u]]


def _min_flow(ix: _Index, edges: list[tuple[int, int]]) -> tuple[int, dict[tuple[int, int], int]]:
    """Minimum root->leaves flow with at least one unit on every edge (lower bounds via demands)."""
    if not edges:
        return (1 if ix.leaf[ix.root] else 0), {}
    sink = -1
    h = nx.DiGraph()
    demand: dict[int, int] = {}
    for u, v in edges:
        h.add_edge(u, v, weight=1)
        demand[u] = demand.get(u, 0) + 1  # one unit must leave u ...
        demand[v] = demand.get(v, 0) - 1  # ... and arrive at v
    nodes_in = {u for e in edges for u in e}
    for x in nodes_in:
        if ix.leaf[x]:
            h.add_edge(x, sink, weight=0)
    # Each unit on sink -> root is one path; make it dominate the cost so the flow minimises paths
    # first and total edge traversals second (fewer redundant loops).
    h.add_edge(sink, ix.root, weight=len(edges) * 4 + 10)
    for x in h.nodes:
        h.nodes[x]["demand"] = demand.get(x, 0)
    flow = nx.min_cost_flow(h)
    f = {(u, v): 1 + flow[u][v] for u, v in edges}
    return flow[sink][ix.root], f


def min_edge_cover_lower_bound(g: nx.DiGraph) -> int:
    """Minimum number of root-to-leaf walks covering every coverable edge, loops unbounded.

    Exact for acyclic graphs; a valid lower bound for any loop bound otherwise.
    """
    ix = _Index(g)
    return _min_flow(ix, _coverable_edges(ix))[0]


def _bfs_path(ix: _Index, start: int, targets: Callable[[int], bool], ok: bytearray) -> list[int] | None:
    prev = {start: None}
    q = deque([start])
    while q:
        u = q.popleft()
        if targets(u):
            out = [u]
            while prev[out[-1]] is not None:
                out.append(prev[out[-1]])
            return out[::-1]
        for c in ix.children[u]:
            if c not in prev and ok[c]:
                prev[c] = u
                q.append(c)
    return None


def _within_cap(path: list[int], cap: int) -> bool:
    counts: dict[int, int] = {}
    for x in path:
        counts[x] = counts.get(x, 0) + 1
        if counts[x] > cap:
            return False
    return True


def _coverage_paths(ix: _Index, max_loops: int) -> list[list[int]]:
    if max_loops < 0:
        raise SamplingError("max_loops must be >= 0")
    cap = max_loops + 1
    ok = ix.ok(frozenset())
    if not ok[ix.root]:
        raise SamplingError("no leaf is reachable from the root")
    edges = _coverable_edges(ix)
    if not edges:
        return [[ix.root]]
    n_paths, flow = _min_flow(ix, edges)
    rem = dict(flow)
    out_edges: dict[int, list[int]] = {}
    for u, v in edges:
        out_edges.setdefault(u, []).append(v)

    walks: list[list[int]] = []
    for _ in range(n_paths):
        u, walk, seen = ix.root, [ix.root], {ix.root: 1}
        while not ix.leaf[u]:
            # Conservation guarantees a remaining out-edge; prefer nodes this walk has seen least
            # so the loop bound is rarely hit, then the edge with most remaining flow.
            v = min((c for c in out_edges.get(u, ()) if rem[(u, c)] > 0),
                    key=lambda c: (seen.get(c, 0), -rem[(u, c)]))
            rem[(u, v)] -= 1
            walk.append(v)
            seen[v] = seen.get(v, 0) + 1
            u = v
        walks.append(walk)

    def subtour(x: int) -> list[int]:
        tour, u = [x], x
        while True:
            v = next(c for c in out_edges.get(u, ()) if rem[(u, c)] > 0)
            rem[(u, v)] -= 1
            tour.append(v)
            u = v
            if u == x:
                return tour

    # Leftover flow is a circulation made of cycles; splice each into a walk with room for it.
    progress = True
    while progress and any(r > 0 for r in rem.values()):
        progress = False
        for w_i in range(len(walks)):
            i = 0
            while i < len(walks[w_i]):
                x = walks[w_i][i]
                if any(rem[(x, c)] > 0 for c in out_edges.get(x, ())):
                    tour = subtour(x)
                    placed = False
                    for cand in [w_i] + [j for j in range(len(walks)) if j != w_i]:
                        wk = walks[cand]
                        if x in wk and _within_cap(wk + tour[1:], cap):
                            k = wk.index(x)
                            walks[cand] = wk[: k + 1] + tour[1:] + wk[k + 1:]
                            placed = True
                            break
                    if not placed:
                        # A separate walk: shortest way in, the cycle, shortest way out.
                        head = _bfs_path(ix, ix.root, lambda y: y == x, ok) or [x]
                        tail = _bfs_path(ix, x, lambda y: ix.leaf[y], ok) or [x]
                        walks.append(head + tour[1:] + tail[1:])
                    progress = True
                i += 1
    # Anything still uncovered (a loop bound too tight for the cycle structure) gets its own walk.
    covered = {(p[k], p[k + 1]) for p in walks for k in range(len(p) - 1)}
    walks = [w for w in walks if _within_cap(w, cap)]
    covered = {(p[k], p[k + 1]) for p in walks for k in range(len(p) - 1)}
    for u, v in edges:
        if (u, v) in covered:
            continue
        head = _bfs_path(ix, ix.root, lambda y: y == u, ok)
        tail = _bfs_path(ix, v, lambda y: ix.leaf[y], ok)
        if head is None or tail is None:
            continue
        walk = head + tail
        if _within_cap(walk, cap):
            walks.append(walk)
            covered |= {(walk[k], walk[k + 1]) for k in range(len(walk) - 1)}
    return _drop_redundant(walks)


def _drop_redundant(walks: list[list[int]]) -> list[list[int]]:
    """Remove walks whose every edge another kept walk also covers (longest first)."""
    edge_sets = [{(w[k], w[k + 1]) for k in range(len(w) - 1)} for w in walks]
    counts: dict[tuple[int, int], int] = {}
    for s in edge_sets:
        for e in s:
            counts[e] = counts.get(e, 0) + 1
    keep = [True] * len(walks)
    for i in sorted(range(len(walks)), key=lambda i: -len(walks[i])):
        if edge_sets[i] and all(counts[e] > 1 for e in edge_sets[i]):
            keep[i] = False
            for e in edge_sets[i]:
                counts[e] -= 1
    return [w for w, k in zip(walks, keep) if k]


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

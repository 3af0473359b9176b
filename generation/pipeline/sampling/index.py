"""The integer view of a graph the samplers work on, and small helpers on walks of node positions."""
from __future__ import annotations

from collections import deque
from typing import Callable

import networkx as nx

from ..convert import flowgraph_root


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
        self._leaf_chain: list[frozenset] | None = None

    @property
    def leaf_chain(self) -> list[frozenset]:
        """For each node that reaches a leaf, the nodes on one shortest way from it to a leaf."""
        if self._leaf_chain is None:
            nxt: list[int | None] = [None] * len(self.nodes)
            seen = bytearray(len(self.nodes))
            order = deque(i for i, is_leaf in enumerate(self.leaf) if is_leaf)
            for i in order:
                seen[i] = 1
            bfs_order = []
            while order:
                i = order.popleft()
                bfs_order.append(i)
                for p in self.parents[i]:
                    if not seen[p]:
                        seen[p] = 1
                        nxt[p] = i
                        order.append(p)
            chains: list[frozenset] = [frozenset()] * len(self.nodes)
            for i in bfs_order:  # a node's successor on the way comes before it in BFS order
                chains[i] = chains[nxt[i]] | {i} if nxt[i] is not None else frozenset([i])
            self._leaf_chain = chains
        return self._leaf_chain

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

def _counts(walk: list[int]) -> dict[int, int]:
    c: dict[int, int] = {}
    for x in walk:
        c[x] = c.get(x, 0) + 1
    return c


def _allowed_except(ix: _Index, avoid: set[int]) -> bytearray:
    allowed = bytearray(b"\x01") * len(ix.nodes)
    for a in avoid:
        allowed[a] = 0
    return allowed

"""Path samplers (paper §3.7): Algorithm 1, a plain random walk, and an edge-coverage sampler.

All samplers are deterministic for a given seed and return root-to-leaf node-id lists.

Loop bound: a node may occur at most ``max_loops + 1`` times in one path, so a path goes round a
cycle at most ``max_loops`` times. A walk never steps onto a node from which no leaf can be reached
without exceeding that bound, so every path ends at a leaf and the bound is never broken.

Algorithm 1 (weighted random walk): weights start at 1, a chosen node's weight grows by one per
visit across all paths, and the next node is drawn among the eligible children with probability
proportional to 1 / weight.

Coverage sampler: covers every edge that lies on some root-to-leaf walk within the loop bound
with as few paths as possible. The lower bound is the value of a minimum flow with a demand of 1
on every such edge (any covering set of walks is such a flow); for graphs without cycles it is the
exact minimum, but the loop bound can make it unattainable. The sampler, stopping as soon as a
cover meets the bound (then it is optimal):

1. decomposes the minimum flow into walks, splices leftover cycles into walks with room for them
   (any rotation of the cycle), cuts walks that still break the bound into pieces within it, and
   covers what the pieces lost with walks that chain as many of those edges as they can; plus two
   strategies that build walks within the bound directly, guided by the flow; each ends with a
   pass that drops walks whose edges other walks cover. Two orders of preference each.
2. picks the smallest cover it can find among all those walks (budgeted exact set cover).
3. on small graphs (at most ``_EXACT_MAX_EDGES`` coverable edges), computes the exact minimum
   under the loop bound: every maximal edge set of a walk within the bound, then an exact
   set-cover search (:func:`min_edge_cover_exact`); budgets count steps, not time, so the result
   stays deterministic, and past them the best cover from 1-2 is returned.

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


def _walk(ix: _Index, cap: int, free_children: list[list[int]], rand: Callable[[], float],
          weights: list[int] | None) -> list[int]:
    """One root-to-leaf walk within the loop bound: uniform choice among the eligible children,
    or, with ``weights``, Algorithm 1's choice (probability proportional to 1 / weight, then the
    chosen child's weight grows by one). The choice is inlined: this is the hot loop."""
    counts = {ix.root: 1}
    blocked: set[int] = {ix.root} if cap <= 1 else set()
    ok: bytearray | None = None  # leaf reachability avoiding ``blocked``, computed only if needed
    chain = ix.leaf_chain
    leaf = ix.leaf
    u = ix.root
    path = [u]
    append = path.append
    while not leaf[u]:
        if blocked:
            # A child is eligible when a leaf is reachable from it without a blocked node. Its
            # shortest way to a leaf usually proves that; only otherwise is the full search run.
            eligible = []
            for v in free_children[u]:
                if v in blocked:
                    continue
                if blocked.isdisjoint(chain[v]):
                    eligible.append(v)
                else:
                    if ok is None:
                        ok = ix.ok(frozenset(blocked))
                    if ok[v]:
                        eligible.append(v)
        else:
            eligible = free_children[u]
        if weights is None:
            v = eligible[int(rand() * len(eligible))]
        else:
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
        append(v)
        c = counts.get(v, 0) + 1
        counts[v] = c
        if c >= cap:
            blocked.add(v)
            ok = None
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
    rand = rng.random
    if sampler == "random":
        return lambda: _walk(ix, cap, free_children, rand, None)
    if sampler != "algorithm1":
        raise SamplingError(f"unknown sampler {sampler!r}; expected one of {', '.join(SAMPLERS)}")
    weights = [1] * len(ix.nodes)

    def walk() -> list[int]:
        weights[ix.root] += 1
        return _walk(ix, cap, free_children, rand, weights)

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


def _coverage_paths(ix: _Index, max_loops: int, exact: bool = True) -> list[list[int]]:
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
    best: list[list[int]] | None = None
    pool: list[list[int]] = []
    strategies = [(_flow_cover, v) for v in range(len(_DECOMPOSE_KEYS))]
    strategies += [(_guided_cover, v) for v in range(len(_GUIDE_KEYS))]
    for strategy, variant in strategies:
        walks = strategy(ix, cap, edges, n_paths, flow, variant)
        pool += walks
        if best is None or len(walks) < len(best):
            best = walks
        if len(best) <= n_paths:
            return best  # at the lower bound: optimal
    # Walks from different strategies combine: the smallest cover drawn from all of them.
    best = _pool_cover(edges, pool, best, n_paths)
    if len(best) <= n_paths:
        return best
    # The loop bound cost paths. On small graphs find the exact minimum under the bound.
    if exact and len(edges) <= _EXACT_MAX_EDGES:
        better = _exact_cover_walks(ix, cap, edges, n_paths, best, **_SAMPLER_EXACT_BUDGET)
        if better is not None:
            return better
    return best


def _pool_cover(edges: list[tuple[int, int]], pool: list[list[int]], best: list[list[int]],
                lower: int) -> list[list[int]]:
    """The smallest cover of ``edges`` by walks from ``pool`` that a budgeted exact set-cover
    search finds, trying one walk fewer than the best so far each time; ``best`` if none."""
    bit = {e: 1 << i for i, e in enumerate(edges)}

    def mask(w: list[int]) -> int:
        m = 0
        for e in zip(w, w[1:]):
            m |= bit.get(e, 0)
        return m

    universe = 0  # what the best cover covers (all edges, unless the bound rules some out)
    for w in best:
        universe |= mask(w)
    by_mask: dict[int, list[int]] = {}
    for w in pool:
        m = mask(w) & universe
        old = by_mask.get(m)
        if old is None or len(w) < len(old):
            by_mask[m] = w
    try:
        sets = _maximal(list(by_mask), len(by_mask))
        max_nodes, used = max(100, 300_000 // len(edges)), [0]
        for k in range(len(best) - 1, lower - 1, -1):
            chosen = _exact_set_cover(universe, sets, k, k + 1, max_nodes, used)
            if chosen is None:
                break
            best = [by_mask[sets[i]] for i in chosen]
    except _Budget:
        pass
    return best


# Orders for picking the next edge while decomposing the flow into walks: (times this walk has
# already visited the child, remaining flow on the edge) in two priorities.
_DECOMPOSE_KEYS = (
    lambda seen, rem: (seen, -rem),
    lambda seen, rem: (-rem, seen),
)
# The exact search inside the sampler is only tried on graphs this small, and gives up past these
# budgets (counted in search steps, so the result is deterministic; well under a second).
_EXACT_MAX_EDGES = 400
_SAMPLER_EXACT_BUDGET = {"max_steps": 100_000, "max_sets": 3_000, "max_nodes": 5_000}


# Orders for the walks of ``_guided_cover``: (edge not yet covered, edge without remaining flow,
# times this walk has visited the child, minus the remaining flow); smallest first.
_GUIDE_KEYS = (
    lambda new, no_flow, seen, rem: (new, no_flow, seen, rem),
    lambda new, no_flow, seen, rem: (no_flow, new, seen, rem),
)


def _guided_cover(ix: _Index, cap: int, edges: list[tuple[int, int]], n_paths: int,
                  flow: dict[tuple[int, int], int], variant: int) -> list[list[int]]:
    """Cover with walks that never break the loop bound: ``n_paths`` walks guided by the minimum
    flow and by the edges still uncovered, stepping only onto nodes from which a leaf stays
    reachable within the bound; then chained walks for whatever is left."""
    key = _GUIDE_KEYS[variant]
    rem = dict(flow)
    need = set(edges)
    ok0 = ix.ok(frozenset())
    chain = ix.leaf_chain
    walks: list[list[int]] = []
    for _ in range(n_paths):
        u, path, counts = ix.root, [ix.root], {ix.root: 1}
        blocked: set[int] = {ix.root} if cap <= 1 else set()
        okb: bytearray | None = None
        while not ix.leaf[u]:
            best_v, best_k = -1, None
            for v in ix.children[u]:
                if not ok0[v] or v in blocked:
                    continue
                if blocked and not blocked.isdisjoint(chain[v]):
                    if okb is None:
                        okb = ix.ok(frozenset(blocked))
                    if not okb[v]:
                        continue
                r = rem.get((u, v), 0)
                k = key((u, v) not in need, r <= 0, counts.get(v, 0), -r)
                if best_k is None or k < best_k:
                    best_v, best_k = v, k
            v = best_v
            if rem.get((u, v), 0) > 0:
                rem[(u, v)] -= 1
            need.discard((u, v))
            path.append(v)
            counts[v] = counts.get(v, 0) + 1
            if counts[v] >= cap:
                blocked.add(v)
                okb = None
            u = v
        walks.append(path)
    walks += _chain_walks(ix, cap, [e for e in edges if e in need])
    return _drop_redundant(walks)


def _flow_cover(ix: _Index, cap: int, edges: list[tuple[int, int]], n_paths: int,
                flow: dict[tuple[int, int], int], variant: int) -> list[list[int]]:
    """Cover by decomposing the minimum flow into walks, repaired to respect the loop bound."""
    ok = ix.ok(frozenset())
    key = _DECOMPOSE_KEYS[variant]
    rem = dict(flow)
    out_edges: dict[int, list[int]] = {}
    for u, v in edges:
        out_edges.setdefault(u, []).append(v)

    walks: list[list[int]] = []
    for _ in range(n_paths):
        u, walk, seen = ix.root, [ix.root], {ix.root: 1}
        while not ix.leaf[u]:
            # Conservation guarantees a remaining out-edge.
            v = min((c for c in out_edges.get(u, ()) if rem[(u, c)] > 0),
                    key=lambda c: key(seen.get(c, 0), rem[(u, c)]))
            rem[(u, v)] -= 1
            walk.append(v)
            seen[v] = seen.get(v, 0) + 1
            u = v
        walks.append(walk)
    counts = [_counts(w) for w in walks]

    # Leftover flow is a circulation made of closed tours; splice each into a walk that meets one
    # of its nodes and has room for it under the bound (any rotation of the tour will do).
    for x in sorted({u for (u, _), r in rem.items() if r > 0}):
        while any(rem[(x, c)] > 0 for c in out_edges.get(x, ())):
            tour, u = [x], x
            while True:
                v = next(c for c in out_edges.get(u, ()) if rem[(u, c)] > 0)
                rem[(u, v)] -= 1
                tour.append(v)
                u = v
                if u == x:
                    break
            tour_counts = _counts(tour[1:])
            placed = False
            for j, wk in enumerate(walks):
                cj = counts[j]
                if any(cj.get(y, 0) + c > cap for y, c in tour_counts.items()):
                    continue
                k = next((k for k, y in enumerate(wk) if y in tour_counts), None)
                if k is None:
                    continue
                y = wk[k]
                r = tour.index(y)
                rotated = tour[r:-1] + tour[:r] + [y]
                walks[j] = wk[: k + 1] + rotated[1:] + wk[k + 1:]
                for z, c in tour_counts.items():
                    cj[z] = cj.get(z, 0) + c
                placed = True
                break
            if not placed:
                walks.append(_tour_walk(ix, tour, ok))
                counts.append(_counts(walks[-1]))

    # Walks over the bound are cut into pieces within it (each piece keeps a stretch of the walk,
    # joined to the root and to a leaf by shortest connections).
    fixed: list[list[int]] = []
    for w, c in zip(walks, counts):
        if max(c.values()) <= cap:
            fixed.append(w)
        else:
            fixed.extend(_split_walk(ix, cap, w))
    walks = fixed
    # Edges the pieces lost are covered by walks that each chain as many of them as they can.
    covered = {(p[k], p[k + 1]) for p in walks for k in range(len(p) - 1)}
    walks += _chain_walks(ix, cap, [e for e in edges if e not in covered])
    return _drop_redundant(walks)


def _chain_walks(ix: _Index, cap: int, todo: list[tuple[int, int]],
                 tries: int = 16) -> list[list[int]]:
    """Walks within the loop bound covering the edges in ``todo``: each walk repeatedly goes the
    shortest way to the nearest edge still to cover that leaves a leaf reachable afterwards, takes
    it, and finally goes the shortest way to a leaf. An edge no walk within the bound can take is
    left out."""
    ok0 = ix.ok(frozenset())
    left = dict.fromkeys(todo)  # ordered set
    out: dict[int, list[int]] = {}
    for u, v in todo:
        out.setdefault(u, []).append(v)
    walks: list[list[int]] = []
    while left:
        path, counts = [ix.root], {ix.root: 1}
        gained = 0
        while True:
            blocked = frozenset(x for x, c in counts.items() if c >= cap)
            okb = ix.ok(blocked)
            step = None
            prev = {path[-1]: None}
            queue = deque([path[-1]])
            attempts = 0
            while queue and step is None and attempts < tries:
                x = queue.popleft()
                for y in out.get(x, ()):
                    if (x, y) not in left or not okb[y]:
                        continue
                    attempts += 1
                    way = [x]
                    while prev[way[-1]] is not None:
                        way.append(prev[way[-1]])
                    ext = way[::-1][1:] + [y]
                    c2 = dict(counts)
                    for z in ext:
                        c2[z] = c2.get(z, 0) + 1
                    if max(c2[z] for z in ext) > cap:
                        continue
                    if not ix.ok(frozenset(z for z, c in c2.items() if c >= cap))[y] and not ix.leaf[y]:
                        continue
                    step = (ext, c2)
                    break
                for y in ix.children[x]:
                    if y not in prev and okb[y]:
                        prev[y] = x
                        queue.append(y)
            if step is None:
                break
            ext, counts = step
            for a, b in zip([path[-1]] + ext, ext):
                if (a, b) in left:
                    del left[(a, b)]
                    gained += 1
            path += ext
        if not ix.leaf[path[-1]]:
            blocked = frozenset(x for x, c in counts.items() if c >= cap)
            tail = _bfs_path(ix, path[-1], lambda z: ix.leaf[z], ix.ok(blocked))
            if tail is None:  # cannot happen: every step kept a leaf reachable
                raise AssertionError("chained walk lost its way to a leaf")
            for a, b in zip(tail, tail[1:]):
                if (a, b) in left:
                    del left[(a, b)]
                    gained += 1
            path += tail[1:]
        if gained:
            walks.append(path)
            continue
        # Nothing reachable from the root this way: route a walk through the first edge left.
        u, v = next(iter(left))
        del left[(u, v)]
        walk = _walk_through(ix, cap, u, v, ok0)
        if walk is not None:
            for a, b in zip(walk, walk[1:]):
                left.pop((a, b), 0)
            walks.append(walk)
    return walks


def _walk_through(ix: _Index, cap: int, u: int, v: int, ok0: bytearray) -> list[int] | None:
    """A walk within the loop bound through edge (u, v): a shortest way in and a shortest way out
    that avoids the nodes the way in used up, or the other way round; None if neither works."""
    head = _bfs_path(ix, ix.root, lambda y: y == u, ok0)
    if head is not None:
        used = frozenset(x for x, c in _counts(head).items() if c >= cap)
        if v not in used:
            tail = _bfs_path(ix, v, lambda y: ix.leaf[y], ix.ok(used))
            if tail is not None and _within_cap(head + tail, cap):
                return head + tail
    tail = _bfs_path(ix, v, lambda y: ix.leaf[y], ok0)
    if tail is not None:
        used = {x for x, c in _counts(tail).items() if c >= cap}
        if u not in used and ix.root not in used:
            head = _bfs_path(ix, ix.root, lambda y: y == u, _allowed_except(ix, used))
            if head is not None and _within_cap(head + tail, cap):
                return head + tail
    return None


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


def _tour_walk(ix: _Index, tour: list[int], ok: bytearray) -> list[int]:
    """A walk root -> the tour -> a leaf, entering and leaving the tour at whichever of its nodes
    gives the shortest walk, avoiding the tour's other nodes where possible."""
    nodes = set(tour)
    best = None
    for r in range(len(tour) - 1):
        y = tour[r]
        allowed = _allowed_except(ix, nodes - {y})
        head = _bfs_path(ix, ix.root, lambda z: z == y, allowed) if y != ix.root else [y]
        tail = _bfs_path(ix, y, lambda z: ix.leaf[z], allowed)
        if head is None or tail is None:
            continue
        walk = head + tour[r + 1:-1] + tour[:r] + tail
        if best is None or len(walk) < len(best):
            best = walk
    if best is None:
        head = _bfs_path(ix, ix.root, lambda z: z == tour[0], ok) or [tour[0]]
        tail = _bfs_path(ix, tour[0], lambda z: ix.leaf[z], ok) or [tour[0]]
        best = head + tour[1:-1] + tail
    return best


def _split_walk(ix: _Index, cap: int, walk: list[int]) -> list[list[int]]:
    """Cut a walk that breaks the loop bound into walks within it covering the same edges where
    possible: follow the walk until the next step would break the bound, close the piece with a
    shortest way to a leaf within the bound (backing up along the walk if there is none), and
    start the next piece with a shortest way from the root to the node where the piece left off."""
    ok = ix.ok(frozenset())
    pieces: list[list[int]] = []
    cur, counts = [walk[0]], {walk[0]: 1}
    base, i = 1, 1  # walk[base:i] is the stretch of the walk that ``cur`` has followed so far
    while i < len(walk):
        v = walk[i]
        if counts.get(v, 0) < cap:
            cur.append(v)
            counts[v] = counts.get(v, 0) + 1
            i += 1
            continue
        j, tail = i, None
        while j > base:
            tail = _bfs_path(ix, cur[-1], lambda z: ix.leaf[z],
                             ix.ok(frozenset(x for x, c in counts.items() if c >= cap)))
            if tail is not None:
                break
            x = cur.pop()
            counts[x] -= 1
            j -= 1
        if tail is not None:
            pieces.append(cur + tail[1:])
            i = j
        # Next piece: root -> walk[i - 1], then on with walk[i] (steps the shortest way in leaves
        # no room for are skipped; the caller covers their edges separately).
        while True:
            head = _bfs_path(ix, ix.root, lambda z: z == walk[i - 1], ok) or [walk[i - 1]]
            cur, counts, base = list(head), _counts(head), i
            if i >= len(walk) or counts.get(walk[i], 0) < cap:
                break
            i += 1
    if base < len(walk) and ix.leaf[cur[-1]]:
        pieces.append(cur)
    return [p for p in pieces if max(_counts(p).values()) <= cap]


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


# --------------------------------------------------------------------------- exact minimum


class _Budget(Exception):
    pass


def _capped_walk_sets(ix: _Index, cap: int, edge_bit: dict[tuple[int, int], int],
                      max_steps: int, max_sets: int) -> dict[int, list[int]]:
    """The edge sets (as bitmasks) of root-to-leaf walks within the loop bound: every maximal one
    (not contained in another), and possibly some others.

    Depth-first over walks. How a walk can go on depends only on where it is and how often it
    has visited each node, so a partial walk whose edges are contained in those of an earlier
    partial walk in the same state is not extended: each of its completions is contained in a
    completion of the earlier one. States are keyed by a 128-bit Zobrist hash of the visit
    counts (seeded, so deterministic; a collision is astronomically unlikely).

    Maps each set to a walk with that edge set. Raises ``_Budget`` after ``max_steps`` search
    steps or past ``max_sets`` distinct sets.
    """
    ok = ix.ok(frozenset())
    if ix.leaf[ix.root]:
        return {0: [ix.root]}
    rng = random.Random(0x5EED)
    zob = [[0] + [rng.getrandbits(128) for _ in range(cap)] for _ in ix.nodes]
    counts = [0] * len(ix.nodes)
    counts[ix.root] = 1
    path, masks, keys = [ix.root], [0], [zob[ix.root][1]]
    stack = [iter(ix.children[ix.root])]
    found: dict[int, list[int]] = {}
    seen: dict[tuple[int, int], list[int]] = {}
    steps = 0
    while stack:
        steps += 1
        if steps > max_steps:
            raise _Budget
        u = path[-1]
        for v in stack[-1]:
            if counts[v] < cap and ok[v]:
                break
        else:
            stack.pop()
            counts[path.pop()] -= 1
            masks.pop()
            keys.pop()
            continue
        c = counts[v]
        m = masks[-1] | edge_bit[(u, v)]
        if ix.leaf[v]:
            old = found.get(m)
            if old is None:
                found[m] = path + [v]
                if len(found) > max_sets:
                    raise _Budget
            continue
        key = (v, keys[-1] ^ zob[v][c] ^ zob[v][c + 1])
        earlier = seen.get(key)
        if earlier is None:
            seen[key] = [m]
        elif any(m & ~e == 0 for e in earlier):
            continue
        else:
            earlier.append(m)
        counts[v] = c + 1
        path.append(v)
        masks.append(m)
        keys.append(key[1])
        stack.append(iter(ix.children[v]))
    return found


def _exact_set_cover(universe: int, sets: list[int], lower: int, upper: int,
                     max_nodes: int, nodes: list[int] | None = None) -> list[int] | None:
    """Smallest k in [lower, upper) and k of ``sets`` (indices) whose union is ``universe``.

    Returns None when no cover smaller than ``upper`` exists. Branch and bound: branch on the
    uncovered element with fewest covering sets; bound by a greedy set of pairwise incompatible
    uncovered elements (no set holds two of them, so each needs its own set). Raises ``_Budget``
    after ``max_nodes`` search nodes.
    """
    n_bits = universe.bit_length()
    covering: list[list[int]] = [[] for _ in range(n_bits)]
    for i, s in enumerate(sets):
        b = s
        while b:
            low = b & -b
            covering[low.bit_length() - 1].append(i)
            b ^= low
    compat = [0] * n_bits
    for e in range(n_bits):
        for i in covering[e]:
            compat[e] |= sets[i]
    order = sorted((e for e in range(n_bits) if universe >> e & 1), key=lambda e: (len(covering[e]), e))
    if any(not covering[e] for e in order):
        return None

    def bound(unc: int) -> int:
        blocked, n = 0, 0
        for e in order:
            if unc >> e & 1 and not blocked >> e & 1:
                n += 1
                blocked |= compat[e]
        return n

    failed: dict[int, int] = {}  # uncovered mask -> largest k known to be insufficient
    if nodes is None:
        nodes = [0]  # search nodes so far (a caller may share the count across calls)

    def search(unc: int, k: int, chosen: list[int]) -> bool:
        if not unc:
            return True
        if k == 0 or failed.get(unc, -1) >= k:
            return False
        nodes[0] += 1
        if nodes[0] > max_nodes:
            raise _Budget
        if bound(unc) > k:
            failed[unc] = max(failed.get(unc, -1), k)
            return False
        e = next(e for e in order if unc >> e & 1)
        for i in sorted(covering[e], key=lambda i: (-(sets[i] & unc).bit_count(), i)):
            chosen.append(i)
            if search(unc & ~sets[i], k - 1, chosen):
                return True
            chosen.pop()
        failed[unc] = max(failed.get(unc, -1), k)
        return False

    for k in range(max(lower, bound(universe)), upper):
        chosen: list[int] = []
        if search(universe, k, chosen):
            return chosen
    return None


def _maximal(sets: list[int], limit: int) -> list[int]:
    """The sets not contained in another, largest first; raises ``_Budget`` past ``limit``.

    ``holding[x]`` is the bitmask of kept sets holding element ``x``; a set is contained in a kept
    set exactly when the AND of ``holding`` over its elements is not empty."""
    kept: list[int] = []
    holding: dict[int, int] = {}
    for s in sorted(sets, key=lambda s: (-s.bit_count(), s)):
        acc, b = -1, s
        while b and acc:
            low = b & -b
            b ^= low
            acc &= holding.get(low, 0)
        if acc and s:
            continue
        me = 1 << len(kept)
        kept.append(s)
        if len(kept) > limit:
            raise _Budget
        b = s
        while b:
            low = b & -b
            b ^= low
            holding[low] = holding.get(low, 0) | me
    return kept


def _exact_cover_walks(ix: _Index, cap: int, edges: list[tuple[int, int]], lower: int,
                       incumbent: list[list[int]] | None = None, max_steps: int = 300_000,
                       max_sets: int = 3_000, max_nodes: int = 100_000) -> list[list[int]] | None:
    """A minimum set of root-to-leaf walks within the loop bound covering every edge such a walk
    can take, found by enumerating the walks' distinct edge sets and an exact set-cover search.

    ``lower`` must be a lower bound when every coverable edge can be covered within the loop
    bound (the minimum-flow value); it is ignored otherwise. With an ``incumbent`` cover that
    covers everything, only covers with fewer walks are searched for. Returns None when no
    better cover exists or a budget is exceeded; the budgets count search steps, not time, so
    the answer is deterministic.
    """
    edge_bit = {e: 1 << i for i, e in enumerate(edges)}
    try:
        found = _capped_walk_sets(ix, cap, edge_bit, max_steps, max_sets * 10)
        universe = 0
        for m in found:
            universe |= m
        if universe != (1 << len(edges)) - 1:
            lower = 1  # the loop bound makes some edges uncoverable: the flow bound does not apply
        upper = universe.bit_count() + 1
        if incumbent is not None:
            have = 0
            for w in incumbent:
                for e in zip(w, w[1:]):
                    have |= edge_bit.get(e, 0)
            if have == universe:
                upper = len(incumbent)
        if lower >= upper:
            return None
        sets = _maximal(list(found), max_sets)
        chosen = _exact_set_cover(universe, sets, lower, upper, max_nodes)
    except _Budget:
        return None
    return None if chosen is None else [found[sets[i]] for i in chosen]


def min_edge_cover_exact(g: nx.DiGraph, max_loops: int = 1, **budget: int) -> int | None:
    """The exact minimum number of root-to-leaf walks, each within the loop bound, covering every
    edge that some such walk takes; None when the graph is too large for the exact search."""
    if max_loops < 0:
        raise SamplingError("max_loops must be >= 0")
    ix = _Index(g)
    if not ix.ok(frozenset())[ix.root]:
        raise SamplingError("no leaf is reachable from the root")
    edges = _coverable_edges(ix)
    if not edges:
        return 1
    walks = _exact_cover_walks(ix, max_loops + 1, edges, _min_flow(ix, edges)[0], None, **budget)
    return None if walks is None else len(walks)

"""The coverage sampler: as few root-to-leaf walks within the loop bound as possible covering a set
of target edges (every coverable edge, or only the ones a caller names); see the package docstring."""
from __future__ import annotations

from .exact import _Budget, _exact_cover_walks, _exact_set_cover, _maximal
from .flow import _coverable_edges, _min_flow
from .index import SamplingError, _counts, _Index
from .repair import _chain_walks, _drop_redundant, _split_walk, _tour_walk, _walk_through
from .walks import _Exhausted, _all_walks


def _coverage_paths(ix: _Index, max_loops: int, exact: bool = True) -> list[list[int]]:
    """The fewest walks within the loop bound covering every coverable edge."""
    cap = _check(ix, max_loops)
    edges = _coverable_edges(ix)
    if not edges:
        return [[ix.root]]
    return _cover(ix, cap, edges, None, exact)


def _target_paths(ix: _Index, max_loops: int, targets: list[tuple[int, int]],
                  exact: bool = True) -> list[list[int]]:
    """The fewest walks within the loop bound covering every edge of ``targets`` (coverable edges)."""
    cap = _check(ix, max_loops)
    if not targets:
        return []
    return _cover(ix, cap, targets, _coverable_edges(ix), exact)


def _complete(ix: _Index, cap: int, edges: list[tuple[int, int]], walks: list[list[int]]) -> list[list[int]]:
    """``walks`` plus a walk through each target edge they miss, when one exists within the bound.

    A strategy's shortest-way-in/out repairs can miss an edge that only a longer detour reaches
    without breaking the loop bound (e.g. a back edge into a node the short way in already used);
    such a result must never count as a cover, let alone an optimal one."""
    covered = {(a, b) for w in walks for a, b in zip(w, w[1:])}
    missing = [e for e in edges if e not in covered]
    if not missing:
        return walks
    walks = list(walks)
    ok0 = ix.ok(frozenset())
    for u, v in missing:
        if (u, v) in covered:
            continue
        walk = _walk_through(ix, cap, u, v, ok0) or _search_walk(ix, cap, u, v)
        if walk is not None:
            walks.append(walk)
            covered.update(zip(walk, walk[1:]))
    return walks


def _search_walk(ix: _Index, cap: int, u: int, v: int, max_steps: int = 200_000) -> list[int] | None:
    """The first walk within the bound (depth first) that takes edge (u, v); None if none is found."""
    try:
        for walk in _all_walks(ix, cap, max_steps):
            if any(a == u and b == v for a, b in zip(walk, walk[1:])):
                return list(walk)
    except _Exhausted:
        return None
    return None


def _check(ix: _Index, max_loops: int) -> int:
    if max_loops < 0:
        raise SamplingError("max_loops must be >= 0")
    if not ix.ok(frozenset())[ix.root]:
        raise SamplingError("no leaf is reachable from the root")
    return max_loops + 1


def _cover(ix: _Index, cap: int, edges: list[tuple[int, int]], support: list[tuple[int, int]] | None,
           exact: bool) -> list[list[int]]:
    n_paths, flow = _min_flow(ix, edges, support)
    best: list[list[int]] | None = None
    pool: list[list[int]] = []
    strategies = [(_flow_cover, v) for v in range(len(_DECOMPOSE_KEYS))]
    strategies += [(_guided_cover, v) for v in range(len(_GUIDE_KEYS))]
    for strategy, variant in strategies:
        walks = _complete(ix, cap, edges, strategy(ix, cap, edges, n_paths, flow, variant))
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
    return _drop_redundant(walks, set(edges))


def _flow_cover(ix: _Index, cap: int, edges: list[tuple[int, int]], n_paths: int,
                flow: dict[tuple[int, int], int], variant: int) -> list[list[int]]:
    """Cover by decomposing the minimum flow into walks, repaired to respect the loop bound."""
    ok = ix.ok(frozenset())
    key = _DECOMPOSE_KEYS[variant]
    rem = dict(flow)
    out_edges: dict[int, list[int]] = {}
    for u, v in flow:  # every edge the flow may use (the targets' support)
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
    return _drop_redundant(walks, set(edges))

"""The exact minimum number of covering walks under the loop bound: every maximal edge set of a
bounded walk, then an exact set-cover search. Budgets count steps, so results are deterministic."""
from __future__ import annotations

import random

import networkx as nx

from .flow import _coverable_edges, _min_flow
from .index import SamplingError, _Index


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
        m = masks[-1] | edge_bit.get((u, v), 0)
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

"""Random walks within the loop bound: Algorithm 1 (paper §3.7) and a uniform random walk, and
the distinct-path drawing both samplers use."""
from __future__ import annotations

import random
from typing import Callable, Iterator

from .index import SamplingError, _Index

WALK_SAMPLERS = ("algorithm1", "random")


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
        raise SamplingError(f"unknown sampler {sampler!r}; expected one of algorithm1, random, coverage")
    weights = [1] * len(ix.nodes)

    def walk() -> list[int]:
        weights[ix.root] += 1
        return _walk(ix, cap, free_children, rand, weights)

    return walk


def _all_walks(ix: _Index, cap: int, max_steps: int) -> Iterator[tuple[int, ...]]:
    """Every root-to-leaf walk within the loop bound, depth first in child order; stops quietly
    after ``max_steps`` search steps (the caller then knows only a lower bound on their number)."""
    ok0 = ix.ok(frozenset())
    counts = [0] * len(ix.nodes)
    counts[ix.root] = 1
    path = [ix.root]
    stack = [iter(ix.children[ix.root])]
    if ix.leaf[ix.root]:
        yield (ix.root,)
        return
    steps = 0
    while stack:
        steps += 1
        if steps > max_steps:
            raise _Exhausted
        for v in stack[-1]:
            if ok0[v] and counts[v] < cap:
                break
        else:
            stack.pop()
            counts[path.pop()] -= 1
            continue
        if ix.leaf[v]:
            yield tuple(path) + (v,)
            continue
        counts[v] += 1
        path.append(v)
        stack.append(iter(ix.children[v]))


class _Exhausted(Exception):
    """The enumeration of walks ran out of steps."""


def distinct_walks(ix: _Index, walk: Callable[[], list[int]], n: int, cap: int,
                   taken: list[list[int]] = ()) -> tuple[list[list[int]], int | None]:
    """Up to ``n`` walks drawn with ``walk``, distinct from each other and from ``taken``.

    Draws until ``n`` distinct walks are found or many draws in a row only repeat earlier ones;
    then the walks are enumerated to add the ones never drawn. Returns the walks and, when the
    graph has fewer distinct walks within the bound than were wanted, their exact number (else
    None: at least as many as wanted exist)."""
    seen = {tuple(p) for p in taken}
    out: list[list[int]] = []
    misses, patience = 0, 64 + 2 * n
    while len(out) < n and misses < patience:
        p = tuple(walk())
        if p in seen:
            misses += 1
            continue
        seen.add(p)
        out.append(list(p))
        misses = 0
    if len(out) >= n:
        return out, None
    try:
        for p in _all_walks(ix, cap, max_steps=200_000 + 100 * n):
            if p not in seen:
                seen.add(p)
                out.append(list(p))
                if len(out) >= n:
                    return out, None
    except _Exhausted:
        return out, None  # too many walks to enumerate: say nothing rather than guess
    return out, len(seen)

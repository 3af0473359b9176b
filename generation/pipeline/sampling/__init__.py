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

Distinct paths: every sampler returns distinct paths. When the graph has fewer distinct
root-to-leaf walks within the bound than asked for, it returns all of them and says how many
exist (:class:`Sample`). ``n`` means n: the coverage sampler returns exactly ``n`` paths when ``n``
is at least its cover (padding with distinct Algorithm 1 paths, seeded); when ``n`` is below the
cover size M it returns the M covering paths and says so in :attr:`Sample.note`, never more
silently.

Target edges (gap filling): :func:`cover_targets` runs the coverage sampler on a given set of
edges only, the flow routing through every other edge as needed: the fewest walks within the
loop bound that take every target edge (exact on small graphs, see 3.).

Modules: ``index`` (integer view), ``walks`` (Algorithm 1, random walk, distinct drawing),
``flow`` (minimum-flow bound, coverage of paths), ``cover`` (coverage sampler), ``repair`` (walk
surgery), ``exact`` (exact minimum).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable, Iterable

import networkx as nx

from .cover import _coverage_paths, _target_paths
from .exact import _capped_walk_sets, min_edge_cover_exact
from .flow import _coverable_edges, _min_flow, coverage, min_edge_cover_lower_bound
from .index import SamplingError, _Index
from .walks import _walker, distinct_walks

SAMPLERS = ("algorithm1", "random", "coverage")

__all__ = [
    "SAMPLERS", "Sample", "coverable_edges", "SamplingError", "TargetCover", "cover_targets", "coverage",
    "min_edge_cover_exact", "min_edge_cover_lower_bound", "sample", "sample_index_paths",
    "sample_paths", "raw_walks", "_capped_walk_sets", "_coverable_edges", "_coverage_paths", "_Index", "_min_flow",
    "_walker",
]


@dataclass
class Sample:
    """What a sampler returned and why it is not exactly what was asked for, when it is not."""
    paths: list[list[Any]]
    requested: int
    sampler: str
    distinct_available: int | None = None  # set when the graph has fewer distinct paths than asked
    minimum: int | None = None  # the coverage sampler's cover size
    notes: list[str] = field(default_factory=list)

    @property
    def note(self) -> str:
        return " ".join(self.notes)


def sample(g: nx.DiGraph, n: int, sampler: str = "algorithm1", seed: int = 0,
           max_loops: int = 1) -> Sample:
    """Sample distinct root-to-leaf paths; see the module docstring for each sampler's semantics."""
    if n < 0:
        raise SamplingError("the number of paths must be >= 0")
    if sampler not in SAMPLERS:
        raise SamplingError(f"unknown sampler {sampler!r}; expected one of {', '.join(SAMPLERS)}")
    ix = _Index(g)
    out = Sample(paths=[], requested=n, sampler=sampler)
    cap = max_loops + 1
    if sampler == "coverage":
        cover = _coverage_paths(ix, max_loops)
        out.minimum = len(cover)
        if n < len(cover):
            out.notes.append(f"{n} paths requested but covering every edge takes {len(cover)}: "
                             f"returning the {len(cover)} covering paths.")
            paths = cover
        else:
            extra, total = distinct_walks(ix, _walker(ix, "algorithm1", seed, max_loops), n - len(cover),
                                          cap, taken=cover)
            paths = cover + extra
            out.distinct_available = total
    else:
        paths, out.distinct_available = distinct_walks(ix, _walker(ix, sampler, seed, max_loops), n, cap)
    if len(paths) < n:
        if out.distinct_available is not None:
            out.notes.append(f"{n} paths requested but the graph has only {out.distinct_available} "
                             f"distinct paths within the loop bound: returning {len(paths)}.")
        else:
            out.notes.append(f"{n} paths requested; only {len(paths)} distinct paths were found.")
    out.paths = [[ix.nodes[i] for i in p] for p in paths]
    return out


def sample_paths(g: nx.DiGraph, n: int, sampler: str = "algorithm1", seed: int = 0,
                 max_loops: int = 1) -> list[list[Any]]:
    """The paths of :func:`sample`."""
    return sample(g, n, sampler, seed, max_loops).paths


def sample_index_paths(g: nx.DiGraph, n: int, sampler: str = "algorithm1", seed: int = 0,
                       max_loops: int = 1) -> list[list[int]]:
    """Raw walks with node positions, repeats allowed: the throughput benchmark's inner loop."""
    ix = _Index(g)
    walk = _walker(ix, sampler, seed, max_loops)
    return [walk() for _ in range(n)]


def raw_walks(g: nx.DiGraph, n: int, sampler: str = "algorithm1", seed: int = 0,
              max_loops: int = 1) -> list[list[Any]]:
    """``n`` Algorithm 1 (or random) walks with node ids, repeats allowed (fixtures that want n
    conversations from a small graph)."""
    nodes = list(g.nodes)
    return [[nodes[i] for i in p] for p in sample_index_paths(g, n, sampler, seed, max_loops)]


def coverable_edges(g: nx.DiGraph) -> list[tuple[Any, Any]]:
    """Edges reachable from the root from which a leaf stays reachable (with a loop bound of at
    least 1, a bounded root-to-leaf walk can take each of them)."""
    ix = _Index(g)
    return [(ix.nodes[u], ix.nodes[v]) for u, v in _coverable_edges(ix)]


@dataclass
class TargetCover:
    paths: list[list[Any]]
    targets: list[tuple[Any, Any]]
    uncoverable: list[tuple[Any, Any]]  # targets no path within the loop bound can take


def cover_targets(g: nx.DiGraph, targets: Iterable[tuple[Hashable, Hashable]], max_loops: int = 1,
                  exact: bool = True) -> TargetCover:
    """The fewest root-to-leaf paths within the loop bound that take every target edge (the
    coverage sampler aimed at a set of edges: gap filling). Targets that are not edges of the
    graph raise; targets no bounded walk from the root can take are reported, not covered."""
    ix = _Index(g)
    wanted = list(dict.fromkeys((u, v) for u, v in targets))
    missing = [e for e in wanted if not g.has_edge(*e)]
    if missing:
        raise SamplingError(f"not an edge of the graph: {missing[0][0]} -> {missing[0][1]}")
    coverable = set(_coverable_edges(ix))
    pos = [(ix.pos[u], ix.pos[v]) for u, v in wanted]
    inside = [e for e in pos if e in coverable]
    walks = _target_paths(ix, max_loops, inside, exact) if inside else []
    taken = {e for w in walks for e in zip(w, w[1:])}
    lost = [(ix.nodes[u], ix.nodes[v]) for u, v in pos if (u, v) not in taken]
    return TargetCover(paths=[[ix.nodes[i] for i in w] for w in walks], targets=wanted, uncoverable=lost)

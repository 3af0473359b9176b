"""Path-sampler benchmark (issue #3).

Run: ``.venv/bin/python bench/paths.py``. For ALMITA-sized conversation graphs (20-40 nodes, with
cycles) and a ~1,000-node graph it prints how many paths each sampler needs for 100 % edge
coverage next to the minimum-flow lower bound (exact for acyclic graphs, where it is reported as
"exact"), as ratios, and the sampling throughput for 100k paths on the 1,000-node graph.
Targets: coverage sampler <= 1.1x the minimum; 100k paths in < 5 s.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import networkx as nx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from generation.pipeline.convert import flowgraph_to_conversation_graph  # noqa: E402
from generation.pipeline.sampling import (coverage, min_edge_cover_lower_bound, sample_index_paths,  # noqa: E402
                                          sample_paths)
from generation.pipeline.synth import random_flowgraph  # noqa: E402

RANDOM_CAP = 20000


def paths_to_full_coverage(g: nx.DiGraph, sampler: str, seed: int) -> int | None:
    """Smallest prefix of one seeded run of the sampler that covers every reachable edge."""
    from generation.pipeline.sampling import _Index, _walker

    ix = _Index(g)
    walk = _walker(ix, sampler, seed, 1)
    root_reach = ix.reachable()
    todo = {(u, v) for u in root_reach for v in ix.children[u]}
    for k in range(1, RANDOM_CAP + 1):
        p = walk()
        for a, b in zip(p, p[1:]):
            todo.discard((a, b))
        if not todo:
            return k
    return None


def almita_sized(n_graphs: int = 40) -> list[nx.DiGraph]:
    graphs, seed = [], 0
    while len(graphs) < n_graphs:
        fg, _ = random_flowgraph(12 + seed % 10, seed, back_edge_p=0.15)
        cg = flowgraph_to_conversation_graph(fg)
        seed += 1
        if 20 <= len(cg) <= 40 and not nx.is_directed_acyclic_graph(cg):
            graphs.append(cg)
    return graphs


def main() -> None:
    print("== ALMITA-sized conversation graphs (20-40 nodes, all with cycles) ==")
    rows = []
    for i, g in enumerate(almita_sized()):
        lb = min_edge_cover_lower_bound(g)
        cov = sample_paths(g, 0, "coverage")
        assert coverage(g, cov)["edge_coverage"] == 1.0
        a1 = paths_to_full_coverage(g, "algorithm1", i)
        rw = paths_to_full_coverage(g, "random", i)
        rows.append((len(g), g.number_of_edges(), lb, len(cov), a1, rw))
    ratios = [r[3] / r[2] for r in rows]
    print(f"graphs: {len(rows)}, nodes {min(r[0] for r in rows)}-{max(r[0] for r in rows)}, "
          f"edges {min(r[1] for r in rows)}-{max(r[1] for r in rows)}")
    print(f"lower bound (min flow): mean {statistics.mean(r[2] for r in rows):.2f} paths")
    print(f"coverage sampler / bound: mean {statistics.mean(ratios):.3f}, max {max(ratios):.3f}, "
          f"at bound in {sum(1 for x in ratios if x == 1)}/{len(ratios)} graphs")
    for name, col in (("algorithm1", 4), ("random walk", 5)):
        vals = [r[col] / r[2] for r in rows if r[col] is not None]
        print(f"{name} paths to 100% edges / bound: mean {statistics.mean(vals):.2f}, "
              f"median {statistics.median(vals):.2f}, max {max(vals):.2f}")

    print("\n== acyclic ALMITA-sized graphs (bound is the exact minimum) ==")
    dag_ratios = []
    for seed in range(40):
        fg, _ = random_flowgraph(14 + seed % 8, 1000 + seed, back_edge_p=0.0)
        g = flowgraph_to_conversation_graph(fg)
        dag_ratios.append(len(sample_paths(g, 0, "coverage")) / min_edge_cover_lower_bound(g))
    print(f"coverage sampler / exact minimum: mean {statistics.mean(dag_ratios):.3f}, max {max(dag_ratios):.3f}")

    print("\n== ~1,000-node conversation graph ==")
    fg, _ = random_flowgraph(460, 7, back_edge_p=0.03)
    g = flowgraph_to_conversation_graph(fg)
    t = time.perf_counter()
    lb = min_edge_cover_lower_bound(g)
    t_lb = time.perf_counter() - t
    t = time.perf_counter()
    cov = sample_paths(g, 0, "coverage")
    t_cov = time.perf_counter() - t
    assert coverage(g, cov)["edge_coverage"] == 1.0
    print(f"nodes {len(g)}, edges {g.number_of_edges()}, cyclic: {not nx.is_directed_acyclic_graph(g)}")
    print(f"coverage sampler: {len(cov)} paths, bound {lb}, ratio {len(cov) / lb:.3f} "
          f"({t_cov:.2f} s; bound alone {t_lb:.2f} s)")
    for sampler in ("algorithm1", "random"):
        need = paths_to_full_coverage(g, sampler, 0)
        print(f"{sampler}: {need if need else f'>{RANDOM_CAP}'} paths to 100% edges"
              + (f", ratio {need / lb:.1f}" if need else ""))
    for sampler in ("algorithm1", "random"):
        t = time.perf_counter()
        paths = sample_index_paths(g, 100_000, sampler, seed=1)
        dt = time.perf_counter() - t
        mean_len = sum(map(len, paths)) / len(paths)
        print(f"{sampler}: 100k paths in {dt:.2f} s ({100_000 / dt:,.0f} paths/s, mean length {mean_len:.1f})"
              f" target < 5 s: {'met' if dt < 5 else 'MISSED'}")


if __name__ == "__main__":
    main()

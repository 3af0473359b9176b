"""The target-edge coverage sampler (gap filling): covers every target edge, within the loop bound,
with the exact minimum number of paths (checked against a brute force on graphs up to 40 nodes)."""
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generation.pipeline.convert import flowgraph_to_conversation_graph
from generation.pipeline.noise import add_noise
from generation.pipeline.sampling import SamplingError, cover_targets
from generation.pipeline.synth import random_flowgraph

from .test_coverage_min import HUB, check_paths


def capped_walks(g, max_loops, limit):
    """Every root-to-leaf walk visiting no node more than max_loops + 1 times; None past ``limit``."""
    root = next(n for n in g if g.in_degree(n) == 0)
    out, path, counts = [], [root], Counter([root])

    def dfs(u):
        if len(out) > limit:
            return
        if g.out_degree(u) == 0:
            out.append(list(path))
            return
        for v in g.successors(u):
            if counts[v] <= max_loops:
                counts[v] += 1
                path.append(v)
                dfs(v)
                path.pop()
                counts[v] -= 1

    dfs(root)
    return None if len(out) > limit else out


def brute_force_target_minimum(walks, targets):
    """Fewest walks whose edges include every coverable target: breadth-first over covered sets."""
    bit = {e: 1 << i for i, e in enumerate(targets)}
    masks = {sum(bit.get(e, 0) for e in set(zip(w, w[1:]))) for w in walks} - {0}
    universe = 0
    for m in masks:
        universe |= m
    if universe == 0:
        return 0, universe
    level, seen, k = {0}, {0}, 0
    while universe not in level:
        k += 1
        level = {a | m for a in level for m in masks} - seen
        seen |= level
    return k, universe


@st.composite
def cyclic_graphs_with_targets(draw, max_nodes=40):
    n = draw(st.integers(4, max_nodes))
    seed = draw(st.integers(0, 10**6))
    back = draw(st.sampled_from([0.1, 0.2, 0.4]))
    g = flowgraph_to_conversation_graph(random_flowgraph(n, seed, back_edge_p=back)[0])
    if draw(st.booleans()):
        g = add_noise(g, 0.3, seed=seed)
    edges = sorted(g.edges, key=str)
    k = draw(st.integers(0, min(12, len(edges))))
    targets = random.Random(draw(st.integers(0, 10**6))).sample(edges, k)
    return g, targets


@settings(max_examples=80, deadline=None)
@given(cyclic_graphs_with_targets(), st.integers(0, 2))
def test_target_sampler_covers_every_target_within_the_bound_with_the_exact_minimum(case, max_loops):
    g, targets = case
    res = cover_targets(g, targets, max_loops=max_loops)
    check_paths(g, res.paths, max_loops)  # root to leaf, along edges, within the loop bound
    taken = {e for p in res.paths for e in zip(p, p[1:])}
    assert set(targets) - set(res.uncoverable) <= taken
    assert not set(res.uncoverable) & taken
    assert res.paths == cover_targets(g, targets, max_loops=max_loops).paths  # deterministic
    walks = capped_walks(g, max_loops, limit=20_000)
    if walks is None or len(g) > 40:
        return  # brute force out of reach
    minimum, universe = brute_force_target_minimum(walks, targets)
    coverable = {e for i, e in enumerate(targets) if universe >> i & 1}
    assert set(res.uncoverable) == set(targets) - coverable  # left out only what no bounded walk takes
    assert len(res.paths) == minimum


def test_hub_targets_need_two_walks_under_one_loop_and_one_under_two():
    both_loops = [("N2", "N3"), ("N2", "N4")]
    assert len(cover_targets(HUB, both_loops, max_loops=1).paths) == 2  # one walk would visit N2 3x
    assert len(cover_targets(HUB, [("N3", "N2"), ("N4", "N2")], max_loops=0).paths) == 0
    assert cover_targets(HUB, [("N3", "N2")], max_loops=0).uncoverable == [("N3", "N2")]
    one = cover_targets(HUB, [("N3", "N2"), ("N4", "N2")], max_loops=2)
    assert len(one.paths) == 1 and one.uncoverable == []
    assert cover_targets(HUB, [], max_loops=1).paths == []


def test_target_that_is_not_an_edge_is_a_clear_error():
    with pytest.raises(SamplingError, match="not an edge of the graph: N0 -> N5"):
        cover_targets(HUB, [("N0", "N5")])


def test_build_tests_says_when_the_cover_needs_more_paths_than_asked(tmp_path):
    import io
    import json
    from pathlib import Path

    from generation.pipeline.cli import build_tests_main

    from .test_commands import A4_APIS

    fixtures = Path(__file__).parent / "fixtures"
    apis = tmp_path / "apis.json"
    apis.write_text(json.dumps(A4_APIS))
    out = io.StringIO()
    assert build_tests_main(fixtures / "a4_flowgraph.txt", apis, tmp_path / "o", paths=1, sampler="coverage",
                            noise=0.0, seed=0, out=out) == 0
    n = json.loads((tmp_path / "o" / "stats.json").read_text())["paths"]
    assert n > 1 and f"note: 1 paths requested but covering every edge takes {n}" in out.getvalue()

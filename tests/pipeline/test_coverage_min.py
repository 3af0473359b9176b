"""Coverage sampler against the exact minimum under the loop bound, and the exact search itself."""
import itertools
import random
from collections import Counter

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from generation.pipeline.convert import flowgraph_to_conversation_graph
from generation.pipeline.formats import parse_graph_text
from generation.pipeline.noise import add_noise
from generation.pipeline.sampling import (_capped_walk_sets, _coverable_edges, _Index, coverage,
                                          min_edge_cover_exact, min_edge_cover_lower_bound, sample_index_paths,
                                          sample_paths)
from generation.pipeline.synth import random_flowgraph

from .strategies import flowgraphs


def edges_of(paths):
    return {(a, b) for p in paths for a, b in zip(p, p[1:])}


def check_paths(g, paths, max_loops):
    root = next(n for n in g if g.in_degree(n) == 0)
    for p in paths:
        assert p[0] == root
        assert all(g.has_edge(a, b) for a, b in zip(p, p[1:]))
        assert g.out_degree(p[-1]) == 0
        assert max(Counter(p).values()) <= max_loops + 1


def all_capped_walks(g, max_loops):
    """Every root-to-leaf walk visiting no node more than max_loops + 1 times (tiny graphs only)."""
    root = next(n for n in g if g.in_degree(n) == 0)
    out, path, counts = [], [root], Counter([root])

    def dfs(u):
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
    return out


def brute_force_minimum(g, max_loops):
    walks = all_capped_walks(g, max_loops)
    sets = list({frozenset(zip(w, w[1:])) for w in walks})
    universe = frozenset().union(*sets)
    if not universe:
        return 1
    for k in range(1, len(sets) + 1):
        for combo in itertools.combinations(sets, k):
            if frozenset().union(*combo) == universe:
                return k
    raise AssertionError("unreachable")


# Two cycles through one hub: unbounded, one walk takes both; with one loop per walk it takes two.
HUB = parse_graph_text("\n".join([
    "[N0](assistant){hello}", "[N1](user){a}", "[N2](assistant){hub}", "[N3](user){b}",
    "[N4](user){c}", "[N5](assistant){bye}",
    "[E0](N0, N1){}", "[E1](N1, N2){}", "[E2](N2, N3){}", "[E3](N3, N2){}", "[E4](N2, N4){}",
    "[E5](N4, N2){}", "[E6](N2, N5){}",
]))


def test_bound_unattainable_under_the_loop_bound_and_the_sampler_finds_the_exact_minimum():
    assert min_edge_cover_lower_bound(HUB) == 1
    assert min_edge_cover_exact(HUB, max_loops=1) == 2
    assert min_edge_cover_exact(HUB, max_loops=2) == 1
    for max_loops, expected in ((1, 2), (2, 1)):
        paths = sample_paths(HUB, 0, "coverage", max_loops=max_loops)
        check_paths(HUB, paths, max_loops)
        assert len(paths) == expected
        assert coverage(HUB, paths)["edge_coverage"] == 1.0


def test_the_two_benchmark_graphs_that_used_to_exceed_1_1x():
    # bench/paths.py almita_sized() graphs 17 and 24 (random_flowgraph seeds 45 and 61): the old
    # sampler needed 7 (exact minimum 6, flow bound 5) and 10 (exact minimum = bound = 9).
    for seed, exact in ((45, 6), (61, 9)):
        g = flowgraph_to_conversation_graph(random_flowgraph(12 + seed % 10, seed, back_edge_p=0.15)[0])
        assert min_edge_cover_exact(g, 1) == exact
        paths = sample_paths(g, 0, "coverage", max_loops=1)
        check_paths(g, paths, 1)
        assert coverage(g, paths)["edge_coverage"] == 1.0
        assert len(paths) == exact


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(3, 7), st.sampled_from([0.2, 0.4]), st.integers(0, 2))
def test_exact_minimum_matches_brute_force_on_tiny_graphs(seed, n, back, max_loops):
    g = flowgraph_to_conversation_graph(random_flowgraph(n, seed, back_edge_p=back)[0])
    if len(all_capped_walks(g, max_loops)) > 60:
        return  # brute force too slow
    exact = min_edge_cover_exact(g, max_loops)
    assert exact == brute_force_minimum(g, max_loops)
    assert len(sample_paths(g, 0, "coverage", max_loops=max_loops)) == exact


@settings(max_examples=60, deadline=None)
@given(flowgraphs(max_nodes=30), st.integers(0, 2), st.sampled_from([0.0, 0.3]))
def test_coverage_sampler_property(fg, max_loops, noise):
    """Every path starts at the root, follows edges, ends at a leaf, respects the loop bound;
    every edge some walk within the bound can take is covered; deterministic; never below the
    bound or the exact minimum, and equal to the exact minimum whenever that is computed."""
    g = add_noise(flowgraph_to_conversation_graph(fg[0]), noise, seed=2)
    paths = sample_paths(g, 0, "coverage", max_loops=max_loops)
    check_paths(g, paths, max_loops)
    assert paths == sample_paths(g, 0, "coverage", max_loops=max_loops)
    ix = _Index(g)
    edges = _coverable_edges(ix)
    coverable = set()
    try:
        found = _capped_walk_sets(ix, max_loops + 1, {e: 1 << i for i, e in enumerate(edges)},
                                  300_000, 30_000)
        union = 0
        for m in found:
            union |= m
        coverable = {(ix.nodes[u], ix.nodes[v]) for i, (u, v) in enumerate(edges) if union >> i & 1}
    except Exception:  # budget: fall back to what every loop bound >= 1 allows
        if max_loops >= 1:
            coverable = {(ix.nodes[u], ix.nodes[v]) for u, v in edges}
    assert coverable <= edges_of(paths)
    if max_loops >= 1:
        assert coverage(g, paths)["edge_coverage"] == 1.0
        assert len(paths) >= min_edge_cover_lower_bound(g)
    exact = min_edge_cover_exact(g, max_loops)
    if exact is not None:
        assert len(paths) >= exact
        if len(g) <= 40:
            assert len(paths) == exact


@settings(max_examples=30, deadline=None)
@given(flowgraphs(max_nodes=20))
def test_exact_minimum_is_the_flow_bound_on_acyclic_graphs(fg):
    g = flowgraph_to_conversation_graph(fg[0])
    if not nx.is_directed_acyclic_graph(g):
        return
    assert min_edge_cover_exact(g, 1) == min_edge_cover_lower_bound(g)


def reference_random_walks(g, n, seed, max_loops):
    """The plain random walk written the slow, obvious way: a child is eligible when a leaf can
    be reached from it without a node already visited max_loops + 1 times."""
    nodes = list(g.nodes)
    root = next(x for x in nodes if g.in_degree(x) == 0)
    rng = random.Random(seed)
    cap = max_loops + 1

    def reaches_leaf(v, blocked):
        h = g.subgraph([x for x in nodes if x not in blocked])
        return v in h and any(h.out_degree(y) == 0 and g.out_degree(y) == 0
                              for y in nx.descendants(h, v) | {v})

    out = []
    for _ in range(n):
        path, counts = [root], Counter([root])
        while g.out_degree(path[-1]):
            blocked = {x for x, c in counts.items() if c >= cap}
            eligible = [v for v in g.successors(path[-1]) if v not in blocked and reaches_leaf(v, blocked)]
            v = eligible[int(rng.random() * len(eligible))]
            path.append(v)
            counts[v] += 1
        out.append(path)
    return out


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.integers(4, 14), st.integers(0, 2))
def test_random_walk_shortcut_matches_the_obvious_eligibility_rule(seed, n, max_loops):
    g = flowgraph_to_conversation_graph(random_flowgraph(n, seed, back_edge_p=0.4)[0])
    nodes = list(g.nodes)  # the raw walker (sample_paths also drops repeats)
    raw = [[nodes[i] for i in p] for p in sample_index_paths(g, 20, "random", seed=seed, max_loops=max_loops)]
    assert raw == reference_random_walks(g, 20, seed, max_loops)

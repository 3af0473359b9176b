"""Hypothesis strategies: random valid flowgraphs built by the seeded generator."""
from hypothesis import strategies as st

from generation.pipeline.synth import random_flowgraph


@st.composite
def flowgraphs(draw, max_nodes: int = 30):
    n = draw(st.integers(min_value=2, max_value=max_nodes))
    seed = draw(st.integers(min_value=0, max_value=10**6))
    back = draw(st.sampled_from([0.0, 0.1, 0.3]))
    return random_flowgraph(n, seed, n_apis=draw(st.integers(1, 4)), back_edge_p=back)

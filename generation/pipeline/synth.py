"""Random valid flowgraphs (with cycles) and matching API lists, for property tests and benchmarks."""
from __future__ import annotations

import random

import networkx as nx

from .apis import ApiSpec, ParamSpec

_OUTCOMES = [("Found", "Not found"), ("Success", "Failed"), ("Valid", "Invalid"), ("Available", "Unavailable")]
_PARAM_TYPES = ["int", "str"]
_OUTPUT_TYPES = ["bool", "dict", "list[dict[str, str]]", "int", "str", "Optional[str]"]


def random_apis(n: int, rng: random.Random) -> list[ApiSpec]:
    names = ["order_id", "email", "phone_number", "account_number", "booking_date", "city", "full_name"]
    apis = []
    for i in range(n):
        params = [ParamSpec(p, rng.choice(_PARAM_TYPES)) for p in rng.sample(names, rng.randint(0, 3))]
        apis.append(ApiSpec(f"api_{i}", f"API number {i}", params, f"out_{i}", rng.choice(_OUTPUT_TYPES)))
    return apis


def random_flowgraph(n_nodes: int, seed: int, n_apis: int = 3, extra_edge_p: float = 0.15,
                     back_edge_p: float = 0.1, api_share: float = 0.3) -> tuple[nx.DiGraph, list[ApiSpec]]:
    """A flowgraph that satisfies every flowgraph rule.

    Nodes are numbered in a topological order of the forward edges; every non-end node gets a
    forward edge, so every node reaches a leaf even with back edges (cycles) added.
    """
    if n_nodes < 2:
        raise ValueError("need at least two nodes")
    rng = random.Random(seed)
    apis = random_apis(max(1, n_apis), rng)
    n_end = max(1, n_nodes // 6)
    types = ["start_message"]
    for i in range(1, n_nodes):
        if i >= n_nodes - n_end:
            types.append("end_message")
        else:
            types.append("api" if rng.random() < api_share else "message")
    g = nx.DiGraph(kind="flowgraph")
    for i, t in enumerate(types):
        label = rng.choice(apis).name if t == "api" else f"Step {i}: tell the customer item {i}"
        g.add_node(f"N{i}", type=t, label=label)
    non_end = [i for i, t in enumerate(types) if t != "end_message"]
    edge_no = [0]
    branch: dict[int, int] = {}

    def label_for(u: int) -> str:
        k = branch.get(u, 0)
        branch[u] = k + 1
        if types[u] == "api":
            good, bad = _OUTCOMES[u % len(_OUTCOMES)]
            return (good, bad)[k] if k < 2 else f"{bad} (case {k})"
        return f"Customer reply {k} at step {u}"

    def add(u: int, v: int) -> None:
        if u == v or g.has_edge(f"N{u}", f"N{v}") or v == 0:
            return
        g.add_edge(f"N{u}", f"N{v}", id=f"E{edge_no[0]}", label=label_for(u))
        edge_no[0] += 1

    for v in range(1, n_nodes):  # every node gets a parent earlier in the order
        candidates = [u for u in non_end if u < v]
        add(rng.choice(candidates), v)
    for u in non_end:  # every non-end node gets a way forward
        if g.out_degree(f"N{u}") == 0:
            add(u, rng.randint(u + 1, n_nodes - 1))
        if rng.random() < extra_edge_p:
            add(u, rng.randint(u + 1, n_nodes - 1))
        if u > 1 and rng.random() < back_edge_p:
            add(u, rng.randint(1, u - 1))
    return g, apis

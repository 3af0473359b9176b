"""The whole offline pipeline in one call: flowgraph + APIs -> conversations and tests."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from .apis import ApiSpec
from .consistency import outcome_violations
from .convert import flowgraph_to_conversation_graph
from .extract import extract_tests
from .noise import add_noise
from .realise import realise_conversation
from .sampling import coverage, sample
from .validate import Violation, errors, validate_conversation, validate_conversation_graph, validate_flowgraph

DEFAULT_PATHS = 10


class BuildError(ValueError):
    def __init__(self, stage: str, violations: list[Violation]) -> None:
        self.stage, self.violations = stage, violations
        super().__init__(f"{stage} is invalid: " + "; ".join(map(str, violations[:5])))


@dataclass
class BuildResult:
    conversation_graph: nx.DiGraph
    paths: list[list[str]]
    conversations: list[dict[str, Any]]
    tests: list[dict[str, Any]]
    stats: dict[str, Any]
    violations: list[Violation] = field(default_factory=list)  # conversation-checker findings
    note: str = ""  # the sampler's word when it returned more or fewer paths than asked (i15)


def build_offline(flowgraph: nx.DiGraph, apis: list[ApiSpec], paths: int | None = None,
                  sampler: str = "algorithm1", noise: float = 0.0, seed: int = 0,
                  max_loops: int = 1) -> BuildResult:
    """Validate, convert, add noise, sample, realise, check and extract.

    ``paths=None`` means "as many as the coverage sampler needs" for the coverage sampler and
    :data:`DEFAULT_PATHS` for the others. Raises :class:`BuildError` when the flowgraph or the
    derived conversation graph breaks a rule; conversation-checker findings are returned.
    """
    fg_errors = errors(validate_flowgraph(flowgraph, [a.name for a in apis]))
    if fg_errors:
        raise BuildError("flowgraph", fg_errors)
    cg = flowgraph_to_conversation_graph(flowgraph)
    if noise > 0:
        cg = add_noise(cg, noise, seed)
    cg_errors = errors(validate_conversation_graph(cg))
    if cg_errors:
        raise BuildError("conversation graph", cg_errors)
    n = paths if paths is not None else (0 if sampler == "coverage" else DEFAULT_PATHS)
    drawn = sample(cg, n, sampler=sampler, seed=seed, max_loops=max_loops)
    sampled = drawn.paths
    conversations, tests, found = [], [], []
    for i, path in enumerate(sampled):
        cid = f"c{i:04d}"
        messages = realise_conversation(cg, path, apis, seed=seed * 100003 + i)
        outcome, _ = outcome_violations(cg, path, messages, apis)
        found += [Violation(v.rule, f"{cid} {v.where}", v.message, v.severity)
                  for v in validate_conversation(messages, apis) + outcome]
        conversations.append({"id": cid, "path": path, "messages": messages})
        for t in extract_tests(messages):
            tests.append({"conversation_id": cid, **t})
    cov = coverage(cg, sampled)
    stats = {
        "nodes": cg.number_of_nodes(),
        "edges": cg.number_of_edges(),
        "paths": len(sampled),
        "node_coverage": cov["node_coverage"],
        "edge_coverage": cov["edge_coverage"],
        "tests": len(tests),
    }
    return BuildResult(cg, sampled, conversations, tests, stats, found, drawn.note if paths is not None else "")

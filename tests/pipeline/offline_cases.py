"""Every flowgraph the tests can build offline conversations from: the paper's fixtures, the
FlowBench-style records in ``fixtures/flowbench``, and (when present) the real STAR task flows and
tau2-bench telecom workflows read from ``../shared/data``. Also every node text of those sets, for
the speech tests."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import networkx as nx

from generation.pipeline.apis import ApiSpec, parse_api_list
from generation.pipeline.formats import parse_graph_text
from generation.pipeline.importers import dot_workflow_to_flowgraph, star_task_to_flowgraph
from generation.pipeline.mermaid import mermaid_to_flowgraph
from generation.pipeline.toolspecs import dedupe_apis

from .conftest import FIXTURES, SHARED_DATA

Case = tuple[str, nx.DiGraph, list[ApiSpec]]


def fixture_cases() -> Iterator[Case]:
    a6 = parse_api_list(json.loads((FIXTURES / "a6_apis.json").read_text()))
    flow = parse_graph_text((FIXTURES / "a4_flowgraph.txt").read_text())
    names = {d["label"] for _, d in flow.nodes(data=True) if d["type"] == "api"}
    yield "a4", flow, a6 + [ApiSpec(n) for n in sorted(names - {a.name for a in a6})]
    for path in sorted((FIXTURES / "flowbench").glob("*.jsonl")):
        for k, line in enumerate(path.read_text().splitlines()):
            rec = json.loads(line)
            apis = parse_api_list({"apis": dedupe_apis(rec.get("apis") or [])[0]})
            g, _ = mermaid_to_flowgraph(rec["workflow"]["flowchart"], apis)
            yield f"{path.stem}#{k + 1}", g, apis


def shared_cases() -> Iterator[Case]:
    if not SHARED_DATA.is_dir():
        return
    for task_file in sorted(SHARED_DATA.glob("star/tasks/*/*.json")):
        if task_file.name == "responses.json":
            continue
        api_file = SHARED_DATA / "star/apis/apis" / f"{task_file.parent.name}.json"
        apis = parse_api_list(json.loads(api_file.read_text())) if api_file.exists() else []
        flow, _ = star_task_to_flowgraph(json.loads(task_file.read_text()), apis[0] if apis else None)
        if not apis:
            apis = [ApiSpec(d["label"]) for _, d in flow.nodes(data=True) if d["type"] == "api"][:1]
        yield f"star/{task_file.parent.name}", flow, apis
    for path in sorted(SHARED_DATA.glob("tau2_bench/telecom/workflows/*.dot")):
        flow, _ = dot_workflow_to_flowgraph(path.read_text())
        yield f"tau2/{path.stem}", flow, []


def all_cases() -> list[Case]:
    return [*fixture_cases(), *shared_cases()]


def shared_node_texts() -> list[str]:
    """Every node text an assistant can be given: the message nodes of every case above, and ABCD's
    action texts, sub-texts and instructions (what a flowgraph drawn from its guidelines carries)."""
    texts = [str(d.get("label", "")) for _, g, _ in all_cases() for _, d in g.nodes(data=True)
             if d.get("type") in ("start_message", "message", "end_message")]
    abcd = SHARED_DATA / "abcd" / "guidelines.json"
    if abcd.exists():
        for flow in json.loads(abcd.read_text()).values():
            for sub in (flow.get("subflows") or {}).values():
                for act in sub.get("actions") or []:
                    texts.append(str(act.get("text", "")))
                    texts += [str(t) for t in act.get("subtext") or []]
                texts += [str(t) for t in sub.get("instructions") or []]
    return [t for t in texts if t.strip()]

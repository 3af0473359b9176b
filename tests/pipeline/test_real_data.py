"""Real third-party flows (read from ../shared/data, never copied) through the offline pipeline."""
import json

import pytest

from generation.pipeline.apis import ApiSpec, parse_api_list
from generation.pipeline.build import build_offline
from generation.pipeline.formats import graph_from_json, graph_to_json, parse_dot_workflow, parse_graph_text, write_graph_text
from generation.pipeline.importers import dot_workflow_to_flowgraph, star_task_to_flowgraph
from generation.pipeline.mermaid import mermaid_to_flowgraph
from generation.pipeline.render import to_mermaid
from generation.pipeline.validate import validate_conversation, validate_conversation_graph, validate_flowgraph


def run_everything(flow, apis, seed=0):
    assert validate_flowgraph(flow, [a.name for a in apis]) == []
    assert write_graph_text(parse_graph_text(write_graph_text(flow))) == write_graph_text(flow)
    for sampler, noise in (("coverage", 0.0), ("algorithm1", 0.2)):
        result = build_offline(flow, apis, paths=None, sampler=sampler, noise=noise, seed=seed)
        assert validate_conversation_graph(result.conversation_graph) == []
        assert result.violations == []
        for conv in result.conversations:
            assert validate_conversation(conv["messages"], apis) == []
        if sampler == "coverage":
            assert result.stats["edge_coverage"] == 1.0
        assert result.tests and all(t["context"][-1]["role"] in ("user", "api_output") for t in result.tests)
    return result


def star_cases(data):
    for task_file in sorted(data.glob("star/tasks/*/*.json")):
        if task_file.name == "responses.json":
            continue
        api_file = data / "star/apis/apis" / f"{task_file.parent.name}.json"
        yield task_file, api_file


def test_star_task_flows_through_the_whole_pipeline(shared_data):
    cases = list(star_cases(shared_data))
    assert len(cases) >= 20
    for task_file, api_file in cases:
        apis = parse_api_list(json.loads(api_file.read_text())) if api_file.exists() else []
        flow, report = star_task_to_flowgraph(json.loads(task_file.read_text()), apis[0] if apis else None)
        if not apis:  # no API file: the api nodes still need a declared API
            apis = [ApiSpec(d["label"]) for _, d in flow.nodes(data=True) if d["type"] == "api"][:1]
        assert all(isinstance(line, str) for line in report)
        run_everything(flow, apis)


def test_star_unattachable_events_are_reported(shared_data):
    task = json.loads((shared_data / "star/tasks/bank_balance/bank_balance.json").read_text())
    _, report = star_task_to_flowgraph(task)
    assert any("info_missing" in line for line in report)


def test_tau2_telecom_dot_workflows_through_the_whole_pipeline(shared_data):
    files = sorted(shared_data.glob("tau2_bench/telecom/workflows/*.dot"))
    assert len(files) == 3
    for path in files:
        flow, report = dot_workflow_to_flowgraph(path.read_text())
        assert report == []
        assert len(flow) > 15
        assert write_graph_text(parse_dot_workflow(path.read_text())) == write_graph_text(flow)
        # decisions were folded into edge labels, so every branch keeps its condition
        assert any("?" in d["label"] for _, _, d in flow.edges(data=True))
        result = run_everything(flow, [])
        # and the flowgraph survives Mermaid and JSON round trips
        back, mreport = mermaid_to_flowgraph(to_mermaid(flow), [])
        assert mreport == [] and write_graph_text(back) == write_graph_text(flow)
        assert write_graph_text(graph_from_json(graph_to_json(result.conversation_graph))) == \
            write_graph_text(result.conversation_graph)

"""A FlowBench-style release written for these tests with every oddity of the published one
(``id>[text]`` over several lines, ``call API:x`` without a space, ``API: x`` nodes, ``call x(...)``,
prose before and notes after the chart, a repeated API, fan-ins, loops, decisions after calls, every
shape, Markdown strings, ``<br>``, entity codes): a strict conversion reads it whole.

The expected figures below were counted by hand from the fixture, independently of the reader.
"""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from generation.pipeline.apis import parse_api_list
from generation.pipeline.cli import build_tests_main, convert_workflow_main, validate_graph_main
from generation.pipeline.mermaid import mermaid_to_flowgraph
from generation.pipeline.toolspecs import dedupe_apis
from generation.pipeline.validate import errors, validate_flowgraph

RELEASE = Path(__file__).parent / "fixtures" / "flowbench" / "oddities.jsonl"
RECORDS = [json.loads(line) for line in RELEASE.read_text().splitlines()]

# Per record: transitions, labelled transitions, calls per calling state (in order), APIs with outputs,
# transitions that become something else (to the start, into a decision folded into a call).
EXPECTED = [
    {"transitions": 11, "labelled": 11, "outputs": 2, "calls": {"H001": ["searchHotel"], "H002": ["bookHotel"]},
     "rerouted": set()},
    {"transitions": 9, "labelled": 8, "outputs": 2, "calls": {"R001": ["checkFare"], "R005": ["orderRide"]},
     "rerouted": {("R001", "R002"), ("R002", "R003"), ("R002", "R004"), ("R004", "R000")}},
    {"transitions": 9, "labelled": 9, "outputs": 2,
     "calls": {"P001": ["queryQueue"], "P002": ["printDoc"], "P005": ["cancelJob"]}, "rerouted": set()},
    {"transitions": 7, "labelled": 5, "outputs": 2, "calls": {"C001": ["seatMap"], "C002": ["moveSeat"]},
     "rerouted": set()},
]


def _specs(record):
    return parse_api_list({"apis": dedupe_apis(record["apis"])[0]})


@pytest.mark.parametrize("k", range(len(RECORDS)))
def test_each_record_converts_strictly_and_whole(k):
    record, want = RECORDS[k], EXPECTED[k]
    specs = _specs(record)
    g, report = mermaid_to_flowgraph(record["workflow"]["flowchart"], specs)  # strict
    stats = g.graph["chart"]
    assert (stats["transitions"], stats["labelled"]) == (want["transitions"], want["labelled"])
    calls: dict[str, list[str]] = {}
    for _, d in g.nodes(data=True):
        if d["type"] == "api":
            calls.setdefault(d["source_id"], []).append(d["label"])
    assert calls == want["calls"] and stats["calls"] == sum(len(v) for v in want["calls"].values())
    assert sum(1 for s in specs if s.outputs) == want["outputs"]
    assert not errors(validate_flowgraph(g, [s.name for s in specs]))
    assert not any("column" in line for line in report)  # nothing malformed, not even leniently
    # Every labelled transition is an edge between its two states with its label, unless the report
    # says where it went instead.
    from generation.pipeline.mermaid.syntax import read_mermaid

    for u, v, label in read_mermaid(record["workflow"]["flowchart"]).edges:
        if (u, v) in want["rerouted"]:
            continue
        assert any(g.nodes[x]["source_id"] == u and g.nodes[y]["source_id"] == v and d["label"] == label
                   for x, y, d in g.edges(data=True)), (u, v, label)


def test_multi_line_asymmetric_nodes_keep_every_line():
    g, report = mermaid_to_flowgraph(RECORDS[0]["workflow"]["flowchart"], _specs(RECORDS[0]))
    text = {d["source_id"]: d["label"] for _, d in g.nodes(data=True) if d["type"] == "message"}
    assert text["H001"].endswith("based on the returned is_found")
    assert text["H002"].startswith("Offer the hotels") and text["H002"].endswith("and check is_booked")
    assert sum(1 for r in report if "read as the asymmetric shape" in r) == 2


def test_the_release_through_the_commands(tmp_path):
    assert validate_graph_main(RELEASE, None, io.StringIO()) == 0
    out = io.StringIO()
    assert convert_workflow_main(RELEASE, "flowbench", "flowgraph", out=out, err=io.StringIO()) == 0
    assert out.getvalue().count("(api)") == 9
    log = io.StringIO()
    assert build_tests_main(RELEASE, RELEASE, tmp_path / "out", out=log) == 0, log.getvalue()
    assert log.getvalue().count("edge coverage 100%") == len(RECORDS)


def test_a_chart_saved_as_mmd_with_its_prose_line_validates(tmp_path):
    chart = tmp_path / "hotel.mmd"
    chart.write_text(RECORDS[0]["workflow"]["flowchart"])
    apis = tmp_path / "apis.json"
    apis.write_text(json.dumps([RECORDS[0]]))
    out = io.StringIO()
    assert validate_graph_main(chart, None, out, apis=apis) == 0, out.getvalue()
    assert "text before the chart is not part of it" in out.getvalue()


@pytest.mark.parametrize("text", ["", "flowchart TD\n", "The chart follows.\n\n", "graph LR\n%% nothing yet\n"])
def test_an_empty_chart_is_refused_by_every_command(tmp_path, text):
    chart = tmp_path / "empty.mmd"
    chart.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    assert convert_workflow_main(chart, "mermaid", "flowgraph", out=out, err=err) == 1
    assert out.getvalue() == "" and "the chart is empty" in err.getvalue()
    assert convert_workflow_main(chart, "mermaid", "flowgraph", out=out, err=err, lenient=True) == 1
    log = io.StringIO()
    assert validate_graph_main(chart, None, log) == 1 and "nothing to convert" in log.getvalue()

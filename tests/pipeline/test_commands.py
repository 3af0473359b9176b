"""The CLI contracts, through the pure entry points and through manage.py."""
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from generation.pipeline.formats import parse_graph_text
from generation.pipeline.cli import build_tests_main, convert_workflow_main, validate_graph_main

from .conftest import FIXTURES

REPO = Path(__file__).resolve().parents[2]
A4_APIS = {"apis": [
    {"name": "get_order_details_by_email", "desc": "Find an order", "params": [{"name": "order_id"}, {"name": "email"}],
     "output": {"name": "order", "type": "dict"}},
    {"name": "get_order_details_by_phone_number", "params": [{"order_id": "int"}, {"phone_number": "str"}], "output": "bool"},
    {"name": "cancel_order", "params": [{"name": "order_id"}], "output": {"name": "cancelled", "type": "bool"}},
    {"name": "refund_order", "params": [{"name": "order_id"}], "output": {"name": "refunds", "type": "list[dict[str, str]]"}},
]}


@pytest.fixture
def apis_file(tmp_path):
    p = tmp_path / "apis.json"
    p.write_text(json.dumps(A4_APIS))
    return p


def test_validate_graph_exit_codes(tmp_path):
    out = io.StringIO()
    assert validate_graph_main(FIXTURES / "a4_flowgraph.txt", None, out) == 0 and out.getvalue() == ""
    bad = tmp_path / "bad.txt"
    bad.write_text("[N0](start_message){hi}\n[N1](message){dangling}\n[E0](N0, N1){x}\n")
    out = io.StringIO()
    assert validate_graph_main(bad, "flowgraph", out) == 1
    assert out.getvalue().splitlines() == ["FG-LEAF-END N1: leaf node of type 'message' must be an end_message"]
    garbled = tmp_path / "garbled.txt"
    garbled.write_text("[N0](start_message){hi}\n<<nonsense>>\n")
    out = io.StringIO()
    assert validate_graph_main(garbled, None, out) == 2 and "line 2" in out.getvalue()
    assert validate_graph_main(tmp_path / "missing.txt", None, io.StringIO()) == 2
    out = io.StringIO()
    assert validate_graph_main(FIXTURES / "a4_flowgraph.txt", "conversation", out) == 1
    assert "CG-NODE-TYPE" in out.getvalue()


def test_build_tests_writes_the_contracted_files(tmp_path, apis_file):
    out_dir = tmp_path / "out"
    code = build_tests_main(FIXTURES / "a4_flowgraph.txt", apis_file, out_dir, paths=6,
                            sampler="coverage", noise=0.2, seed=4, out=io.StringIO())
    assert code == 0
    stats = json.loads((out_dir / "stats.json").read_text())
    assert set(stats) == {"nodes", "edges", "paths", "node_coverage", "edge_coverage", "tests"}
    assert stats["paths"] == 6 and stats["edge_coverage"] == 1.0
    paths = json.loads((out_dir / "paths.json").read_text())
    convs = [json.loads(line) for line in (out_dir / "conversations.jsonl").read_text().splitlines()]
    tests = [json.loads(line) for line in (out_dir / "tests.jsonl").read_text().splitlines()]
    assert [c["path"] for c in convs] == paths and len(tests) == stats["tests"]
    assert all(set(c) == {"id", "path", "messages"} for c in convs)
    ids = {c["id"] for c in convs}
    for t in tests:
        assert set(t) == {"conversation_id", "position", "context", "expected"} and t["conversation_id"] in ids
        assert t["expected"]["type"] in ("reply", "api_call")
    assert (out_dir / "conversation_graph.txt").read_text().startswith("<flow>")
    # same seed, same output
    again = tmp_path / "again"
    build_tests_main(FIXTURES / "a4_flowgraph.txt", apis_file, again, paths=6, sampler="coverage",
                     noise=0.2, seed=4, out=io.StringIO())
    assert (again / "tests.jsonl").read_text() == (out_dir / "tests.jsonl").read_text()


def test_build_tests_rejects_invalid_flowgraph_and_unknown_apis(tmp_path):
    apis = tmp_path / "apis.json"
    apis.write_text(json.dumps({"apis": [{"name": "cancel_order"}]}))
    out = io.StringIO()
    assert build_tests_main(FIXTURES / "a4_flowgraph.txt", apis, tmp_path / "o", out=out) == 1
    assert "FG-UNKNOWN-API N2" in out.getvalue()
    assert build_tests_main(FIXTURES / "a4_flowgraph.txt", tmp_path / "nope.json", tmp_path / "o", out=io.StringIO()) == 2


def test_convert_workflow_formats(tmp_path):
    src = FIXTURES / "a4_flowgraph.txt"
    outputs = {}
    for dst in ("flowgraph", "mermaid", "code", "dot", "text"):
        out, err = io.StringIO(), io.StringIO()
        assert convert_workflow_main(src, "flowgraph", dst, out=out, err=err) == 0
        outputs[dst] = out.getvalue()
    assert outputs["mermaid"].startswith("flowchart TD") and outputs["dot"].startswith("digraph")
    mmd = tmp_path / "chart.mmd"
    mmd.write_text(outputs["mermaid"])
    out, err = io.StringIO(), io.StringIO()
    assert convert_workflow_main(mmd, "mermaid", "flowgraph", out=out, err=err) == 0
    assert err.getvalue() == ""
    # Mermaid has no edge ids, so the round trip keeps everything but the (repeated) A.4 edge ids.
    def content(text):
        g = parse_graph_text(text)
        return list(g.nodes(data=True)), sorted((u, v, d["label"]) for u, v, d in g.edges(data=True))
    assert content(out.getvalue()) == content(outputs["flowgraph"])
    assert convert_workflow_main(tmp_path / "nope", "mermaid", "text", out=io.StringIO(), err=io.StringIO()) == 2


def run_manage(*args):
    env = {**os.environ, "DEBUG": "true"}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not (REPO / "manage.py").exists(), reason="Django project not present")
def test_manage_py_commands(tmp_path, apis_file):
    ok = run_manage("validate_graph", str(FIXTURES / "a4_flowgraph.txt"))
    assert ok.returncode == 0, ok.stderr
    bad = tmp_path / "bad.txt"
    bad.write_text("[N0](start_message){hi}\n[N1](message){dangling}\n[E0](N0, N1){x}\n")
    res = run_manage("validate_graph", str(bad), "--kind", "flowgraph")
    assert res.returncode == 1 and res.stdout.startswith("FG-LEAF-END N1:")
    out_dir = tmp_path / "built"
    res = run_manage("build_tests", "--flowgraph", str(FIXTURES / "a4_flowgraph.txt"), "--apis", str(apis_file),
                     "--out", str(out_dir), "--paths", "4", "--sampler", "algorithm1", "--noise", "0.1", "--seed", "1")
    assert res.returncode == 0, res.stderr
    assert json.loads((out_dir / "stats.json").read_text())["paths"] == 4
    res = run_manage("convert_workflow", str(FIXTURES / "a4_flowgraph.txt"), "--from", "flowgraph", "--to", "mermaid")
    assert res.returncode == 0 and res.stdout.startswith("flowchart TD")

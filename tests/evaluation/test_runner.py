"""The standalone runner (`python -m evaluation.runner`): metrics, protocol errors counted wrong
with reasons, exit codes, JUnit XML shape, baselines, and no Django."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from evaluation.http_agent import HttpAgent
from evaluation.runner import core
from evaluation.runner.cli import main
from evaluation.runner.release_file import ReleaseFileError, load, parse_lines
from tests.evaluation.conftest import EXPECTED, FLOWGRAPH, TESTS
from tests.evaluation.http_agents import HTTP_SCRIPT, AgentServer, ok, scripted_http, release_rows, tool_call, write_release_file

ROOT = Path(__file__).resolve().parents[2]


def counts(doc: dict) -> dict:
    return {k: (v["numerator"], v["denominator"]) for k, v in doc["metrics"].items()}


def run(tmp_path, url, *extra) -> tuple[int, dict]:
    out = tmp_path / "out.json"
    rc = main([str(write_release_file(tmp_path / "rel.jsonl")), "--agent-url", url, "--json", str(out),
               "--quiet", "--bootstrap", "200", *extra])
    return rc, json.loads(out.read_text()) if out.exists() else {}


def test_hand_computed_metrics_over_every_response_shape(tmp_path):
    with AgentServer(scripted_http) as agent:
        rc, doc = run(tmp_path, agent.url)
    assert rc == 0 and counts(doc) == EXPECTED
    assert doc["passed"] and doc["release"]["name"] == "hand-made"
    seven = next(r for r in doc["tests"] if r["test_id"] == 7)
    assert seven["predicted_type"] == "invalid" and "not valid JSON" in seven["reason"]
    body = agent.requests[0]
    assert body["protocol"] == "almita-agent/1" and body["knowledge"]["format"] == "procedure"
    assert {t["function"]["name"] for t in body["tools"]} == {"get_order_details", "refund_order", "cancel_order"}
    assert set(body["ids"]) == {"release", "conversation", "test"} and body["ids"]["release"] == "hand-made@1"


def test_api_turns_become_tool_calls_and_tool_results(tmp_path):
    rows = release_rows(TESTS[:1])
    rows[0]["context"] = [{"role": "user", "content": "order 812 [t1]"},
                          {"role": "api", "content": "get_order_details(order_id=812)"},
                          {"role": "api_output", "content": '{"order": {"status": "late"}}'}]
    with AgentServer(lambda b: ok({"type": "reply", "content": "x"})) as agent:
        main([str(write_release_file(tmp_path / "r.jsonl", rows)), "--agent-url", agent.url, "--quiet"])
    msgs = agent.requests[0]["messages"]
    assert msgs[1]["role"] == "assistant" and msgs[1]["tool_calls"][0]["function"] == {
        "name": "get_order_details", "arguments": '{"order_id": 812}'}
    assert msgs[2] == {"role": "tool", "tool_call_id": msgs[1]["tool_calls"][0]["id"],
                       "content": '{"order": {"status": "late"}}'}


def test_protocol_errors_are_counted_wrong_with_reasons(tmp_path):
    """Timeout and HTTP 500 (after retries) are outages: no answer; truncated JSON is unreadable; a
    call to an unknown tool is a call to a wrong API; a 429 is retried. With t7's garbage, 4 of 10
    tests without a readable answer is above the 10 % limit: exit 3, the run failed, whatever the
    gates say."""
    seen: dict[int, int] = {}

    def handler(body):
        t = int(body["ids"]["test"])
        seen[t] = seen.get(t, 0) + 1
        if t == 1:
            return 200, b'{"type": "reply", "content": "late"}', 1.5  # beyond the 0.5 s timeout
        if t == 2:
            return 500, b'{"error": "boom"}', 0.0
        if t == 3:
            return 200, b'{"type": "reply", "content": ', 0.0  # truncated JSON
        if t == 4:
            return ok(tool_call("get_order", {"order_id": 900}))  # not a tool of the test
        if t == 5 and seen[t] == 1:
            return 429, b'{"error": "slow down"}', 0.0
        return HTTP_SCRIPT[t]

    with AgentServer(handler) as agent:
        rc, doc = run(tmp_path, agent.url, "--timeout", "0.5", "--retries", "1", "--fail-under", "reply_recall=0")
        assert rc == 3 and doc["status"] == "failed" and doc["complete"] is False and not doc["passed"]
        assert doc["errors"] == {"tests": 10, "outages": 2, "unreadable": 2, "share": 0.4, "limit": 0.1,
                                 "failed": True, "complete": False, "reason": doc["reason"]}
        assert doc["reason"].startswith("4 of 10 tests (40.0 %) have no readable answer (2 got no answer")
        assert doc["gates"][0]["passed"]  # the gate alone would pass: the run's failure decides
        reasons = {r["test_id"]: r["reason"] for r in doc["tests"]}
        by_id = {r["test_id"]: r for r in doc["tests"]}
        assert by_id[1]["predicted_type"] == by_id[2]["predicted_type"] == "failed"
        assert by_id[3]["predicted_type"] == "invalid" and "not valid JSON" in reasons[3]
        assert "no answer within 0.5 s (after 2 attempts)" in reasons[1]
        assert "HTTP 500" in reasons[2] and "after 2 attempts" in reasons[2] and seen[2] == 2
        # A call to a tool that is not offered is a call to a wrong API, not an unreadable answer.
        assert by_id[4]["predicted_type"] == "api_call" and by_id[4]["api_recalled"] and not by_id[4]["api_correct"]
        assert "get_order is not one of the APIs offered" in reasons[4]
        # The 429 was retried and the answer read (t5's " Damaged " is wrong under the exact comparison).
        assert by_id[5]["predicted_type"] == "api_call" and seen[5] == 2 and "invalid" not in by_id[5]["reason"]
        # With a higher limit the same answers are a run that measured the agent: the gates decide.
        rc, doc = run(tmp_path, agent.url, "--timeout", "0.5", "--retries", "1", "--max-error-share", "40%")
        assert rc == 0 and doc["status"] == "succeeded" and doc["complete"] is False  # outages: incomplete


def test_concurrency_cap_and_auth_header(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_AGENT_TOKEN", "s3cret")
    with AgentServer(lambda b: (*scripted_http(b)[:2], 0.1)) as agent:
        rc, doc = run(tmp_path, agent.url, "--concurrency", "3", "--auth-env", "MY_AGENT_TOKEN")
    assert counts(doc) == EXPECTED and agent.peak <= 3 and agent.peak >= 2
    assert all(h.get("Authorization") == "Bearer s3cret" for h in agent.headers)
    assert "s3cret" not in json.dumps(doc)


def test_exit_codes_for_thresholds_and_bad_input(tmp_path, capsys):
    with AgentServer(scripted_http) as agent:
        assert run(tmp_path, agent.url, "--fail-under", "test_correct=0.3", "--fail-under", "api_recall=80%")[0] == 0
        rc, doc = run(tmp_path, agent.url, "--fail-under", "test_correct=0.31")
        assert rc == 1 and not doc["passed"] and "30.0% (3/10) < 31.0%" in doc["gates"][0]["message"]
        assert main([str(tmp_path / "rel.jsonl"), "--agent-url", agent.url, "--fail-under", "accuracy=0.5"]) == 2
        assert main([str(tmp_path / "rel.jsonl"), "--agent-url", agent.url, "--fail-under", "test_correct=7"]) == 2
        assert main([str(tmp_path / "missing.jsonl"), "--agent-url", agent.url]) == 2
        assert main([str(tmp_path / "rel.jsonl"), "--agent-url", "ftp://x"]) == 2
    err = capsys.readouterr().err
    assert "unknown metric 'accuracy'" in err and "missing.jsonl" in err


def test_baseline_regression_beyond_the_interval(tmp_path):
    """A perfect baseline: the scripted agent is worse beyond the paired interval on test
    correctness (exit 1); against its own results it passes."""
    def perfect(body):
        expected = next(r["expected"] for r in release_rows() if r["test_id"] == body["ids"]["test"])
        if expected["type"] == "reply":
            return ok({"type": "reply", "content": expected["content"]})
        return ok({"type": "api_call", "name": expected["name"], "parameters": expected["parameters"]})

    rows = release_rows()
    # Twenty conversations so the bootstrap interval is narrow enough to exclude zero.
    many = []
    for k in range(20):
        for r in rows:
            many.append({**r, "test_id": k * 100 + r["test_id"], "conversation_id": k * 1000 + r["conversation_id"]})
    release = write_release_file(tmp_path / "many.jsonl", many)
    mapping = {r["test_id"]: r["test_id"] % 100 for r in many}
    with AgentServer(lambda b: perfect({"ids": {"test": mapping[b["ids"]["test"]]}})) as a:
        assert main([str(release), "--agent-url", a.url, "--json", str(tmp_path / "base.json"), "--quiet"]) == 0
    with AgentServer(lambda b: scripted_http({"ids": {"test": mapping[b["ids"]["test"]]}})) as a:
        rc = main([str(release), "--agent-url", a.url, "--baseline", str(tmp_path / "base.json"),
                   "--json", str(tmp_path / "now.json"), "--quiet"])
        assert rc == 1
        doc = json.loads((tmp_path / "now.json").read_text())
        failed = {g["metric"] for g in doc["gates"] if not g["passed"]}
        assert "test_correct" in failed and "conversation_correct" in failed
        assert main([str(release), "--agent-url", a.url, "--baseline", str(tmp_path / "now.json"), "--quiet"]) == 0
    # A baseline holding only metrics (and its release): compared with the lower bound of its interval.
    base = json.loads((tmp_path / "base.json").read_text())
    (tmp_path / "metrics-only.json").write_text(json.dumps({"release": base["release"], "metrics": base["metrics"]}))
    with AgentServer(lambda b: scripted_http({"ids": {"test": mapping[b["ids"]["test"]]}})) as a:
        assert main([str(release), "--agent-url", a.url, "--baseline", str(tmp_path / "metrics-only.json"),
                     "--quiet"]) == 1
    # Without its release it cannot be matched: a usage error, before any test is asked.
    (tmp_path / "anonymous.json").write_text(json.dumps({"metrics": base["metrics"]}))
    assert main([str(release), "--agent-url", "http://127.0.0.1:9/", "--baseline", str(tmp_path / "anonymous.json")]) == 2
    (tmp_path / "bad.json").write_text("[1, 2]")
    assert main([str(release), "--agent-url", "http://127.0.0.1:9/", "--baseline", str(tmp_path / "bad.json")]) == 2


# --------------------------------------------------------------------------- JUnit


def check_junit_shape(path: Path) -> ET.Element:
    """The JUnit XML shape CI systems read: the Ant/Jenkins junit-10 XSD (which GitLab and the
    GitHub reporters accept), written out as checks since no XSD validator is installed:
    <testsuites> of <testsuite> with the required attributes name, package, id, hostname,
    timestamp (ISO 8601 without zone), tests, failures, errors, time, and the required children
    <properties> (of <property name value>), then <testcase name classname time> (each with at
    most one <failure message type>), then <system-out> and <system-err>; counts agree with the
    children; numbers are numbers. A case holds at most one <failure> (a wrong answer) or <error>
    (no answer, an unreadable one, a failed run); the suite counts each kind."""
    import re as _re

    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    total = failures = errors = 0
    for i, suite in enumerate(root):
        assert suite.tag == "testsuite"
        for attr in ("name", "package", "id", "hostname", "timestamp", "tests", "failures", "errors", "time"):
            assert attr in suite.attrib, attr
        assert _re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", suite.get("timestamp"))
        assert int(suite.get("id")) == i
        children = [c.tag for c in suite]
        assert children[0] == "properties" and children[-2:] == ["system-out", "system-err"]
        assert all(p.tag == "property" and p.get("name") and p.get("value") is not None for p in suite[0])
        cases = [c for c in suite if c.tag == "testcase"]
        assert len(cases) == len(children) - 3
        assert int(suite.get("tests")) == len(cases)
        float(suite.get("time"))
        n_fail = n_error = 0
        for case in cases:
            assert case.get("name") and case.get("classname")
            float(case.get("time"))
            inner = list(case)
            assert len(inner) <= 1 and all(ch.tag in ("failure", "error") for ch in inner)
            if inner:
                assert inner[0].get("message") and inner[0].get("type")
                n_fail += inner[0].tag == "failure"
                n_error += inner[0].tag == "error"
        assert int(suite.get("failures")) == n_fail and int(suite.get("errors")) == n_error
        total += len(cases)
        failures += n_fail
        errors += n_error
    assert int(root.get("tests")) == total and int(root.get("failures")) == failures
    assert int(root.get("errors")) == errors
    return root


def test_junit_one_testcase_per_test_with_expected_vs_got(tmp_path):
    junit = tmp_path / "junit.xml"
    with AgentServer(scripted_http) as agent:
        rc, _ = run(tmp_path, agent.url, "--junit", str(junit), "--fail-under", "test_correct=0.9")
    assert rc == 1
    root = check_junit_shape(junit)
    tests, gates = root
    # 7 wrong: 6 wrong answers (<failure>) and t7's unreadable answer (<error>)
    assert (tests.get("tests"), tests.get("failures"), tests.get("errors")) == ("10", "6", "1")
    four = next(c for c in tests.iter("testcase") if c.get("name").startswith("test 4 "))
    assert four.get("name") == "test 4 (position 1, trial 0)"
    assert four.find("failure").get("message").startswith(
        'expected api_call: get_order_details({"order_id": 900}) | got reply: What is your order number?')
    seven = next(c for c in tests.iter("testcase") if c.get("name").startswith("test 7 "))
    assert seven.find("error").get("type") == "unreadable" and "not valid JSON" in seven.find("error").get("message")
    eight = next(c for c in tests.iter("testcase") if c.get("name").startswith("test 8 "))
    assert "order_id: expected 55 (number), got 56 (number)" in eight.find("failure").get("message")
    assert gates.get("name").endswith(".gates") and gates.find("testcase/failure") is not None
    health = gates.find("testcase")
    assert health.get("name").startswith("run health") and not list(health)  # 1 of 10 is within 10 %


def test_progress_bar_only_on_a_terminal(tmp_path):
    from io import StringIO

    from evaluation.runner.cli import Progress

    tty, pipe = StringIO(), StringIO()
    Progress(tty, enabled=True)(5, 10)
    Progress(pipe)(5, 10)
    assert "5/10" in tty.getvalue() and "#" * 15 in tty.getvalue() and pipe.getvalue() == ""


# --------------------------------------------------------------------------- files, purity


def test_release_file_errors_name_the_line_and_field(tmp_path):
    with pytest.raises(ReleaseFileError, match=r"x.jsonl:2: not valid JSON"):
        parse_lines(['{"almita_release": {}}', "{oops"], name="x.jsonl")
    with pytest.raises(ReleaseFileError, match=r"x.jsonl:1: field 'expected'"):
        parse_lines(['{"test_id": 1, "conversation_id": 1, "context": [], "expected": {"type": "dance"}}'], name="x.jsonl")
    with pytest.raises(ReleaseFileError, match="announces 3 tests but the file holds 1"):
        parse_lines(['{"almita_release": {"tests": 3}}', json.dumps(release_rows()[0])])
    with pytest.raises(ReleaseFileError, match="appears twice"):
        parse_lines([json.dumps(release_rows()[0])] * 2)
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe")
    with pytest.raises(ReleaseFileError, match="not UTF-8"):
        load(tmp_path / "bin.jsonl")
    assert len(parse_lines([json.dumps(r) for r in release_rows()]).tests) == 10  # a bare tests.jsonl


def test_the_runner_imports_no_django_and_starts_fast(tmp_path):
    # The pure metric and agent-reading code too, including the lazy imports a request with a
    # Mermaid workflow and a context with an API call make (generation.pipeline).
    code = ("import sys, time; t = time.perf_counter(); import evaluation.runner.cli, evaluation.protocol, "
            "evaluation.http_agent, evaluation.runner.gates, evaluation.runner.junit, evaluation.agents, evaluation.reader, "
            "evaluation.metrics; s = time.perf_counter() - t; "
            f"fg = {FLOWGRAPH!r}; "
            "evaluation.protocol.request_body({'context': [{'role': 'api', 'content': 'f(a=1)'}], 'flowgraph': fg}, "
            "knowledge='mermaid'); "
            "bad = sorted(m for m in sys.modules if m == 'django' or m.startswith(('django.', 'openai', 'celery')));"
            "print(bad); print(s)")
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    bad, seconds = out.stdout.splitlines()
    assert bad == "[]", bad
    assert float(seconds) < 1.0


def test_python_dash_m_runner_as_a_process(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    with AgentServer(scripted_http) as agent:
        proc = subprocess.run([sys.executable, "-m", "evaluation.runner", str(write_release_file(tmp_path / "r.jsonl")),
                               "--agent-url", agent.url, "--fail-under", "conversation_correct=0.3"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "FAIL  Conversation correctness 25.0% (1/4) < 30.0%" in proc.stdout


@hsettings(max_examples=200, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40))
def test_runner_lexical_f1_equals_the_products(a, b):
    from evaluation.similarity import lexical_f1

    assert core.lexical_f1(a, b) == lexical_f1(a, b)


def test_http_agent_rejects_bad_urls_and_kinds():
    with pytest.raises(ValueError, match="must start with http"):
        HttpAgent(url="localhost:8000")
    with pytest.raises(ValueError, match="agent kind"):
        HttpAgent(url="http://x", kind="grpc")


def test_reports_never_carry_credentials_from_the_agent_url():
    from evaluation.runner.cli import public_url

    assert public_url("https://bot:s3cret@agent.example.org:8443/v1?x=1") == "https://agent.example.org:8443/v1?x=1"
    assert public_url("http://127.0.0.1:8808/") == "http://127.0.0.1:8808/"

"""A broken agent never reads as success (issue #27, item 4) and trials work for every agent kind
(item 5): the runner's and `manage.py evaluate`'s exit codes, the error-share rule, the circuit
breaker, baselines of another release, JUnit <error> vs <failure>, and the trial index in every
export. Real local HTTP agents (tests/evaluation/http_agents.py) and closed ports, no mocks."""
from __future__ import annotations

import csv
import io
import json
import socket
import xml.etree.ElementTree as ET

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from evaluation import agent_kinds, services
from evaluation.models import EvaluationRun, RunStatus
from evaluation.runner.cli import main
from tests.evaluation.conftest import EXPECTED, make_release
from tests.evaluation.http_agents import HTTP_SCRIPT, AgentServer, ok, release_rows, scripted_http, write_release_file
from tests.evaluation.test_runner import check_junit_shape, counts
from tests.fake_openai import fake_openai, openai_settings  # noqa: F401 - fixtures


def dead_url() -> str:
    """A port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/agent"


def sixty_two_tests() -> list[dict]:
    rows = []
    for k in range(7):
        rows += [{**r, "test_id": 100 * k + r["test_id"], "conversation_id": 1000 * k + r["conversation_id"]}
                 for r in release_rows()]
    return rows[:62]


def runner(tmp_path, url, *extra, rows=None, name="hand-made") -> tuple[int, dict]:
    out = tmp_path / "out.json"
    out.unlink(missing_ok=True)
    release = write_release_file(tmp_path / f"{name}.jsonl", rows, name=name)
    rc = main([str(release), "--agent-url", url, "--json", str(out), "--quiet", "--bootstrap", "50", *extra])
    return rc, json.loads(out.read_text()) if out.exists() else {}


# --------------------------------------------------------------------------- the runner


def test_runner_against_a_dead_port_exits_3_never_0(tmp_path):
    url = dead_url()
    for gates in ([], ["--fail-under", "reply_recall=0.0"]):
        rc, doc = runner(tmp_path, url, *gates, rows=sixty_two_tests())
        assert rc == 3 and doc["status"] == "failed" and doc["complete"] is False and doc["passed"] is False
        assert doc["errors"]["outages"] == 62 and doc["unanswered"] == 62 and doc["unparseable"] == 0
        assert doc["reason"].startswith("stopped after 5 consecutive requests without an answer (last: connection failed")
        assert all(r["predicted_type"] == "failed" and not r["correct"] for r in doc["tests"])


def test_the_breaker_stops_asking_a_hung_agent(tmp_path):
    """62 tests, 4 in flight, each request hangs past its 0.3 s timeout: after 5 outages in a row
    nothing more is asked. (Wall time is measured by bench/runner_down.py, not asserted here.)"""
    with AgentServer(lambda body: (200, b"{}", 2.0)) as hung:
        rc, doc = runner(tmp_path, hung.url, "--timeout", "0.3", "--retries", "0", "--concurrency", "4",
                         rows=sixty_two_tests())
        asked = len(hung.requests)
    assert rc == 3 and 5 <= asked <= 5 + 4 - 1
    not_asked = [r for r in doc["tests"] if r["reason"].startswith("not asked: stopped after 5 consecutive requests")]
    assert len(not_asked) == 62 - asked
    assert all("no answer within 0.3 s" in r["reason"] for r in doc["tests"])


@pytest.mark.parametrize("answer,kind", [((500, b'{"error": "boom"}', 0.0), "outages"),
                                         ((200, b"<html>garbage</html>", 0.0), "unreadable")])
def test_runner_exits_3_on_500_or_garbage_even_with_a_zero_gate(tmp_path, answer, kind):
    with AgentServer(lambda body: answer) as agent:
        rc, doc = runner(tmp_path, agent.url, "--fail-under", "reply_recall=0.0", "--retries", "0", "--breaker", "0")
    assert rc == 3 and doc["errors"][kind] == 10 and doc["status"] == "failed" and doc["gates"][0]["passed"]


def test_a_baseline_of_another_release_is_refused_with_exit_2(tmp_path, capsys):
    rows = release_rows()
    def header(hash_: str, id_: int) -> dict:
        return {"almita_release": {"format": "almita-release/1", "id": id_, "name": "support", "version": 1,
                                   "content_hash": hash_, "tests": len(rows)}}

    def write(path, head):
        path.write_text("\n".join(json.dumps(x) for x in [head, *rows]) + "\n")
        return path

    a, b = write(tmp_path / "a.jsonl", header("a" * 64, 1)), write(tmp_path / "b.jsonl", header("b" * 64, 1))
    with AgentServer(scripted_http) as agent:
        assert main([str(a), "--agent-url", agent.url, "--json", str(tmp_path / "base.json"), "--quiet"]) == 0
        asked = len(agent.requests)
        assert main([str(b), "--agent-url", agent.url, "--baseline", str(tmp_path / "base.json"), "--quiet"]) == 2
        assert "the baseline is from support@1 (id 1, content hash aaaaaaaaaaaa…), not support@1" in capsys.readouterr().err
        c = write(tmp_path / "c.jsonl", header("a" * 64, 2))  # same content hash, another release id
        assert main([str(c), "--agent-url", agent.url, "--baseline", str(tmp_path / "base.json"), "--quiet"]) == 2
        assert len(agent.requests) == asked  # refused before any test was asked
        assert main([str(a), "--agent-url", agent.url, "--baseline", str(tmp_path / "base.json"), "--quiet"]) == 0
        # Files without an id or content hash are matched by the hash of their test lines.
        bare1 = write_release_file(tmp_path / "bare1.jsonl", rows)
        assert main([str(bare1), "--agent-url", agent.url, "--json", str(tmp_path / "bare.json"), "--quiet"]) == 0
        other = tmp_path / "bare2.jsonl"
        other.write_text("\n".join(json.dumps(r) for r in rows[:9]) + "\n")
        assert main([str(other), "--agent-url", agent.url, "--baseline", str(tmp_path / "bare.json"), "--quiet"]) == 2


def test_runner_trials_carry_their_index_in_json_and_junit(tmp_path):
    """An HTTP agent is sampled as it is: here it answers test 1 right only on its 2nd ask."""
    asked: dict[int, int] = {}

    def agent(body):
        t = int(body["ids"]["test"])
        asked[t] = asked.get(t, 0) + 1
        if t == 1 and asked[t] != 2:
            return ok({"type": "reply", "content": "The weather is nice."})
        return HTTP_SCRIPT[t]

    with AgentServer(agent) as server:
        rc, doc = runner(tmp_path, server.url, "--trials", "3", "--concurrency", "1", "--junit",
                         str(tmp_path / "j.xml"))
    assert rc == 0 and len(doc["tests"]) == 30
    assert sorted({r["trial"] for r in doc["tests"]}) == [0, 1, 2]
    assert [r["trial"] for r in doc["tests"] if r["test_id"] == 1] == [0, 1, 2]
    assert [r["correct"] for r in doc["tests"] if r["test_id"] == 1] == [False, True, False]
    rows = doc["trials"]["metrics"]["test_correct"]["rows"]
    assert [r["k"] for r in rows] == [1, 2, 3]
    names = [c.get("name") for c in check_junit_shape(tmp_path / "j.xml")[0]]
    assert "test 1 (position 1, trial 2)" in names and len([n for n in names if n]) == 30


def test_output_that_cannot_be_written_is_a_usage_error(tmp_path):
    with AgentServer(scripted_http) as agent:
        rc = main([str(write_release_file(tmp_path / "r.jsonl")), "--agent-url", agent.url, "--quiet",
                   "--json", str(tmp_path)])  # a directory
    assert rc == 2


# --------------------------------------------------------------------------- the product


def test_evaluate_on_a_down_agent_exits_3_and_writes_the_failed_run(small_release, tmp_path, capsys):
    agent_kinds.agent_create_http(name="down", url=dead_url(), retries=0, timeout=2)
    with pytest.raises(CommandError, match="ended failed: stopped after 5 consecutive") as failed:
        call_command("evaluate", "--release", "hand-made", "--agent", "down", "--inline", "--concurrency", "1",
                     "--similarity", "lexical", "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml"),
                     "--fail-under", "reply_recall=0")
    assert failed.value.returncode == 3
    out = capsys.readouterr().out
    assert "complete: no" in out and "no answer: 10" in out and "FAILED: stopped after 5" in out
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["status"] == "failed" and doc["complete"] is False and doc["passed"] is False
    assert len(doc["tests"]) == 10 and {r["predicted_type"] for r in doc["tests"]} == {"failed"}
    tests, gates = check_junit_shape(tmp_path / "r.xml")
    assert (tests.get("tests"), tests.get("errors"), tests.get("failures")) == ("10", "10", "0")
    assert gates.find("testcase/error").get("type") == "agent_failed"


def test_evaluate_refuses_a_baseline_of_another_release_before_running(small_release, tmp_path):
    other = make_release(name="other")
    call_command("evaluate", "--release", "other", "--agent", "gold", "--inline", "--similarity", "lexical",
                 "--concurrency", "1", "--json", str(tmp_path / "other.json"))
    runs = EvaluationRun.objects.count()
    with pytest.raises(CommandError, match=f"the baseline is from other@1 \\(id {other.pk}") as usage:
        call_command("evaluate", "--release", "hand-made", "--agent", "gold", "--inline", "--similarity", "lexical",
                     "--baseline", str(tmp_path / "other.json"))
    assert usage.value.returncode == 2 and EvaluationRun.objects.count() == runs


def test_too_many_unreadable_answers_fail_the_run(small_release):
    """t7 is garbage in the script; t6 too here: 2 of 10 (20 %) is above 10 %, within 20 %."""
    def agent(body):
        return (200, b"nonsense", 0.0) if int(body["ids"]["test"]) == 6 else scripted_http(body)

    with AgentServer(agent) as server:
        http = agent_kinds.agent_create_http(name="bot", url=server.url)
        strict = services.run_execute_inline(run=services.run_create(agent=http, release=small_release,
                                                                     similarity="lexical", start=False), workers=1)
        loose = services.run_execute_inline(run=services.run_create(agent=http, release=small_release, start=False,
                                                                    similarity="lexical", max_error_share=0.2),
                                            workers=1)
    assert strict.status == RunStatus.FAILED and strict.metrics["complete"] is False
    assert strict.error.startswith("2 of 10 tests (20.0 %) have no readable answer (0 got no answer")
    assert loose.status == RunStatus.SUCCEEDED and loose.metrics["complete"] is True
    assert loose.metrics["errors"]["unreadable"] == 2


def test_http_agent_trials_carry_their_index_in_every_export(small_release, tmp_path, client, researcher):
    from rest_framework.test import APIClient

    with AgentServer(scripted_http) as server:
        agent_kinds.agent_create_http(name="bot", url=server.url)  # temperature 0: sampled as it is
        call_command("evaluate", "--release", "hand-made", "--agent", "bot", "--inline", "--concurrency", "1",
                     "--similarity", "lexical", "--trials", "3", "--json", str(tmp_path / "t.json"),
                     "--junit", str(tmp_path / "t.xml"))
    run = EvaluationRun.objects.get(agent__name="bot")
    assert run.status == RunStatus.SUCCEEDED and run.trials == 3 and len(server.requests) == 30
    doc = json.loads((tmp_path / "t.json").read_text())
    assert counts(doc) == EXPECTED and len(doc["tests"]) == 30  # the seven metrics: the first trial
    assert sorted(r["trial"] for r in doc["tests"] if r["test_id"] == 4) == [0, 1, 2]
    assert "trials" in doc and "trials" in run.metrics
    names = {c.get("name") for c in ET.parse(tmp_path / "t.xml").getroot()[0].iter("testcase")}
    assert {f"test 4 (position 1, trial {t})" for t in range(3)} <= names
    client.force_login(researcher)
    response = client.get(reverse("evaluation:run_results_csv", args=[run.pk]))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert sorted(r["trial"] for r in rows if r["test_id"] == "4") == ["0", "1", "2"]
    api = APIClient()
    api.force_authenticate(researcher)
    body = api.get(f"/api/evaluation-runs/{run.pk}/results/?page_size=100").json()
    assert body["count"] == 30 and sorted(r["trial"] for r in body["results"] if r["test_id"] == 4) == [0, 1, 2]
    eight = next(r for r in body["results"] if r["test_id"] == 8 and r["trial"] == 0)
    assert eight["reason"] == "parameters of cancel_order: order_id: expected 55 (number), got 56 (number)"


@pytest.mark.parametrize("who,status", [("annotator_a", 403), (None, 403)])
def test_the_results_api_checks_the_role(small_release, request, who, status):
    from rest_framework.test import APIClient

    run = services.run_execute_inline(run=services.run_create(
        agent=services.reference_agents_ensure()[0], release=small_release, similarity="lexical", start=False),
        workers=1)
    api = APIClient()
    if who:
        api.force_authenticate(request.getfixturevalue(who))
    assert api.get(f"/api/evaluation-runs/{run.pk}/results/").status_code in (status, 401)


def test_check_on_a_dead_port_says_the_connection_failed(client, researcher):
    agent = agent_kinds.agent_create_http(name="down", url=dead_url(), retries=0, timeout=2)
    client.force_login(researcher)
    page = client.post(reverse("evaluation:agent_check", args=[agent.pk]), follow=True).content.decode()
    assert "down: no answer: connection failed" in page and "answered in" not in page


def test_a_session_with_an_agent_that_gives_no_answer_fails_instead_of_counting_a_turn(db, fake_openai,
                                                                                     openai_settings):
    """Sessions read answers through the same reader: no answer fails the session (resume asks
    again); before, it was noted as an 'unparseable' turn and the session went on."""
    from evaluation import session_services as SV
    from tests.evaluation.sessions_script import make_release as make_session_release
    from tests.evaluation.sessions_script import scripted

    fake_openai.set_handler(scripted())
    agent = agent_kinds.agent_create_http(name="down", url=dead_url(), retries=0, timeout=2)
    run = SV.session_run_execute_inline(run=SV.session_run_create(agent=agent, release=make_session_release(),
                                                                  start=False))
    assert run.status == RunStatus.FAILED and "could not be completed" in run.error
    errors = list(run.results.values_list("state", "error"))
    assert errors and all(state == "failed" and "the agent gave no answer: connection failed" in error
                          for state, error in errors)

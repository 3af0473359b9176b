"""HTTP agents and own-prompt agents inside the product: runs, sessions, gates on
`manage.py evaluate`, the portable release file, and their pages."""
from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from evaluation import agent_kinds, services
from evaluation import session_services as SV
from evaluation.models import Agent, AgentMode, EvaluationRun, RunStatus
from evaluation.runner.release_file import parse_lines
from generation.models import LLMCall
from tests.evaluation.conftest import EXPECTED
from tests.evaluation.http_agents import AgentServer, function_calling_agent, ok, scripted_http, tool_call
from tests.evaluation.test_runner import check_junit_shape, counts
from tests.fake_openai import fake_openai, openai_settings  # noqa: F401 - fixtures


def metric_counts(run) -> dict:
    return {k: (v["numerator"], v["denominator"]) for k, v in run.metrics["metrics"].items()}


def test_an_http_agent_run_gives_the_hand_computed_metrics(small_release, monkeypatch):
    monkeypatch.setenv("SUPPORT_BOT_API_KEY", "tok-123")
    with AgentServer(lambda b: (*scripted_http(b)[:2], 0.05)) as server:
        agent = agent_kinds.agent_create_http(name="bot", url=server.url, api_key_env="SUPPORT_BOT_API_KEY",
                                              max_concurrency=2)
        run = services.run_create(agent=agent, release=small_release, similarity="lexical", concurrency=6,
                                  start=False)
        assert run.concurrency == 2  # the agent's cap
        run = services.run_execute_inline(run=run, workers=1)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert metric_counts(run) == EXPECTED
    assert server.peak <= 2 and len(server.requests) == 10
    assert {h["Authorization"] for h in server.headers} == {"Bearer tok-123"}
    assert {b["ids"]["release"] for b in server.requests} == {"hand-made@1"}
    seven = run.results.get(entry__test_id=7)
    assert seven.predicted_type == "invalid" and "not valid JSON" in seven.error
    assert not LLMCall.objects.exists()  # no LLM call is logged for an HTTP agent
    stored = json.dumps(list(EvaluationRun.objects.values()), default=str) + json.dumps(list(Agent.objects.values()), default=str)
    assert "tok-123" not in stored + "".join(run.results.values_list("raw_reply", flat=True))


def test_an_http_agent_that_is_down_fails_the_run_and_the_breaker_stops_it(small_release, client, researcher):
    """Before: succeeded, complete, unanswered 0, every test 'unparseable'. Now every test that was
    asked got no answer (FAILED, resumable), the circuit breaker stops the run after 5 of them, the
    tests not reached count as unanswered, and the page, the API and the report all say so."""
    from rest_framework.test import APIClient

    agent = agent_kinds.agent_create_http(name="down", url="http://127.0.0.1:9/agent", retries=0, timeout=2)
    run = services.run_execute_inline(run=services.run_create(agent=agent, release=small_release,
                                                              similarity="lexical", start=False), workers=1)
    assert run.status == RunStatus.FAILED
    assert run.error.startswith("stopped after 5 consecutive tests without an answer (last: connection failed")
    asked = run.results.filter(state="failed")
    assert asked.count() == 5 and all("connection failed" in e for e in asked.values_list("error", flat=True))
    assert not run.results.filter(state="done").exists()  # nothing was judged as an answer
    report = services.run_current_report(run)
    assert report["complete"] is False and report["unanswered"] == 10 and report["unparseable"] == 0
    assert report["errors"]["outages"] == 10 and report["errors"]["failed"]
    client.force_login(researcher)
    page = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert "stopped after 5 consecutive tests without an answer" in page and "Complete: <strong>no</strong>" in page
    api = APIClient()
    api.force_authenticate(researcher)
    body = api.get(f"/api/evaluation-runs/{run.pk}/").json()
    assert body["status"] == "failed" and body["error"] == run.error
    ok_, message = services.agent_check(agent)
    assert not ok_ and message.startswith("down: no answer: connection failed") and "answered in" not in message


def test_http_agent_settings_are_checked(db):
    with pytest.raises(services.EvaluationError, match="http:// or https://"):
        agent_kinds.agent_create_http(name="x", url="file:///etc/passwd")
    with pytest.raises(services.EvaluationError, match="NAME of an environment variable"):
        agent_kinds.agent_create_http(name="x", url="http://a", api_key_env="SECRET_KEY")
    with pytest.raises(services.EvaluationError, match="system prompt"):
        agent_kinds.agent_create_own_prompt(name="y", system_prompt="  ")


def test_own_prompt_agent_sends_only_its_prompt_the_conversation_and_the_tools(small_release, fake_openai,
                                                                                openai_settings):
    fake_openai.set_handler(function_calling_agent)
    agent = agent_kinds.agent_create_own_prompt(name="deployed", system_prompt="You are Shopbot. Be brief.",
                                                model="fake-model")
    run = services.run_execute_inline(run=services.run_create(agent=agent, release=small_release,
                                                              similarity="lexical", start=False), workers=1)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert metric_counts(run) == EXPECTED
    body = fake_openai.requests[0]
    assert body["messages"][0] == {"role": "system", "content": "You are Shopbot. Be brief."}
    assert all(m["role"] in ("user", "assistant") for m in body["messages"][1:])
    assert "procedure" not in json.dumps(body["messages"]).lower()  # no product prompt, no A.8 text
    assert {t["function"]["name"] for t in body["tools"]} == {"get_order_details", "refund_order", "cancel_order"}
    assert "greet is not one of the APIs offered" in run.results.get(entry__test_id=7).error


def test_a_session_run_with_an_http_agent(db, fake_openai, openai_settings):
    from tests.evaluation.sessions_script import make_release as make_session_release
    from tests.evaluation.sessions_script import scripted

    def agent(body):
        last = body["messages"][-1]
        text = last.get("content") or ""
        if last["role"] == "user" and text == "Hi, my order has not arrived.":
            return ok({"type": "reply", "content": "Your order ID, please?"})
        if last["role"] == "user" and text == "It is 812.":
            return ok(tool_call("get_order_details", {"order_id": 812}))
        if last["role"] == "tool" and "lost" in text:
            return ok({"role": "assistant", "content": "It was lost. Refund?"})
        if last["role"] == "user" and text == "Yes please.":
            return ok(tool_call("refund_order", {"order_id": "812", "reason": "LOST "}))
        if last["role"] == "tool" and "refunded" in text:
            return ok({"role": "assistant", "content": "Refunded."})
        if last["role"] == "user" and text == "Please cancel order 55.":
            return ok({"type": "api_call", "name": "cancel_order", "parameters": {"order_id": 56}})
        if last["role"] == "tool" and "error" in text:
            return 200, b"Hmm, I could not find that order.", 0.0
        return ok({"type": "reply", "content": "Anything else?"})

    fake_openai.set_handler(scripted())
    release = make_session_release()
    with AgentServer(agent) as server:
        http = agent_kinds.agent_create_http(name="bot", url=server.url)
        run = SV.session_run_execute_inline(run=SV.session_run_create(agent=http, release=release, start=False))
    assert run.status == RunStatus.SUCCEEDED, run.error
    m = run.metrics["metrics"]
    assert (m["success_rate"]["numerator"], m["success_rate"]["denominator"]) == (1, 2)
    assert (m["tool_recall"]["numerator"], m["tool_recall"]["denominator"]) == (2, 3)
    assert run.metrics["unparseable_answers"] == 1 and len(server.requests) == 7
    # the API outputs came back as tool results answering the agent's tool calls
    with_tool = [b["messages"] for b in server.requests if b["messages"][-1]["role"] == "tool"]
    assert len(with_tool) == 3
    for msgs in with_tool:
        assert msgs[-2]["tool_calls"][0]["id"] == msgs[-1]["tool_call_id"]


def test_evaluate_command_gates_junit_and_json(small_release, tmp_path, capsys):
    with AgentServer(scripted_http) as server:
        agent_kinds.agent_create_http(name="bot", url=server.url)
        call_command("evaluate", "--release", "hand-made", "--agent", "bot", "--inline", "--concurrency", "1", "--similarity", "lexical",
                     "--fail-under", "test_correct=0.3", "--json", str(tmp_path / "a.json"),
                     "--junit", str(tmp_path / "a.xml"))
        assert "PASS  Test correctness 30.0% (3/10) >= 30.0%" in capsys.readouterr().out
        doc = json.loads((tmp_path / "a.json").read_text())
        assert counts(doc) == EXPECTED and doc["passed"] and len(doc["tests"]) == 10
        suite = check_junit_shape(tmp_path / "a.xml")[0]
        assert (suite.get("failures"), suite.get("errors")) == ("6", "1")  # t7's unreadable answer is an error
        with pytest.raises(CommandError, match="1 gate\\(s\\) failed") as gate:
            call_command("evaluate", "--release", "hand-made", "--agent", "bot", "--inline", "--concurrency", "1", "--similarity",
                         "lexical", "--fail-under", "api_recall=0.9")
        assert gate.value.returncode == 1
        with pytest.raises(CommandError, match="unknown metric") as usage:
            call_command("evaluate", "--release", "hand-made", "--agent", "bot", "--inline", "--concurrency", "1", "--similarity",
                         "lexical", "--fail-under", "nope=1")
        assert usage.value.returncode == 2
        # the gold reference as baseline: the HTTP agent is worse beyond the paired interval
        call_command("evaluate", "--release", "hand-made", "--agent", "gold", "--inline", "--concurrency", "1",
                     "--similarity", "lexical", "--json", str(tmp_path / "gold.json"))
        with pytest.raises(CommandError, match="gate\\(s\\) failed"):
            call_command("evaluate", "--release", "hand-made", "--agent", "bot", "--inline", "--concurrency", "1",
                         "--similarity", "lexical", "--baseline", str(tmp_path / "gold.json"))
        assert "worse beyond the interval" in capsys.readouterr().out
        # against its own earlier results it passes
        call_command("evaluate", "--release", "hand-made", "--agent", "bot", "--inline", "--concurrency", "1",
                     "--similarity", "lexical", "--baseline", str(tmp_path / "a.json"))


def test_portable_file_round_trip(small_release, tmp_path):
    from curation.models import ReleaseRecord

    ReleaseRecord.objects.create(release=small_release, kind="flowgraph", object_id=1,
                                 data={"graph": {"nodes": [{"id": "N0", "type": "start_message", "label": "Hi"}],
                                                 "edges": []}})
    out = tmp_path / "rel.jsonl"
    call_command("export_portable", "hand-made", str(out))
    lines = out.read_text().splitlines()
    header = json.loads(lines[0])["almita_release"]
    assert header["format"] == "almita-release/1" and header["name"] == "hand-made" and header["tests"] == 10
    rf = parse_lines(lines)
    assert rf.label == "hand-made@1" and len(rf.tests) == 10 and "1" in rf.flowgraphs
    assert rf.tests[0] == small_release.entries.order_by("conversation_id", "position", "id")[0].data


@pytest.mark.parametrize("who,status", [("researcher", 200), ("admin_user", 200), ("annotator_a", 403),
                                        (None, 302)])
def test_own_agent_pages_check_the_role(client, request, small_release, who, status):
    if who:
        client.force_login(request.getfixturevalue(who))
    for url in (reverse("evaluation:own_agents"), reverse("evaluation:release_portable", args=[small_release.pk])):
        assert client.get(url).status_code == status
    if who is None or status == 403:
        n = Agent.objects.count()
        client.post(reverse("evaluation:http_agent_create"), {"name": "x", "url": "http://a"})
        assert Agent.objects.count() == n


def test_creating_agents_through_the_page(client, researcher):
    client.force_login(researcher)
    assert client.get(reverse("evaluation:http_agent_create")).status_code == 405
    r = client.post(reverse("evaluation:http_agent_create"), {
        "name": "bot", "url": "http://127.0.0.1:8808/", "knowledge": "mermaid", "api_key_env": "BOT_API_KEY",
        "auth_header": "X-Api-Key", "timeout": "5", "retries": "1", "max_concurrency": "4"})
    assert r.status_code == 302
    bot = Agent.objects.get(name="bot")
    assert (bot.mode, bot.base_url, bot.auth_header, bot.max_concurrency) == (AgentMode.HTTP, "http://127.0.0.1:8808/",
                                                                             "X-Api-Key", 4)
    bad = client.post(reverse("evaluation:http_agent_create"), {"name": "b2", "url": "http://a", "api_key_env": "sk-live-123",
                                                               "timeout": "5", "retries": "1", "max_concurrency": "4",
                                                               "knowledge": "procedure"})
    assert bad.status_code == 400 and b"not a secret" in bad.content and b"sk-live-123" not in bad.content
    r = client.post(reverse("evaluation:own_prompt_agent_create"), {
        "name": "mine", "system_prompt": "You are <b>Shopbot</b>.", "temperature": "0", "api_key_env": ""})
    assert r.status_code == 302 and Agent.objects.get(name="mine").mode == AgentMode.OWN_PROMPT
    page = client.get(reverse("evaluation:own_agents")).content.decode()
    assert "bot" in page and "BOT_API_KEY" in page and "LLM with its own system prompt" in page


def test_session_runs_of_http_agents_through_the_api(researcher, fake_openai, openai_settings,
                                                      django_capture_on_commit_callbacks):
    from rest_framework.test import APIClient

    from tests.evaluation.sessions_script import make_release as make_session_release

    release = make_session_release()
    http = agent_kinds.agent_create_http(name="bot", url="http://127.0.0.1:9/agent")
    own = agent_kinds.agent_create_own_prompt(name="mine", system_prompt="You are Shopbot.")
    c = APIClient()
    c.force_authenticate(researcher)
    for agent in (http, own):
        with django_capture_on_commit_callbacks(execute=False):
            r = c.post("/api/session-runs/", {"agent": agent.pk, "release": release.pk, "limit": 1}, format="json")
        assert r.status_code == 201, r.content

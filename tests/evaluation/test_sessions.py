"""Session-level evaluation (FlowBench): task summaries, the simulated user, the environment, the
judge and the metrics, then whole session runs against the fake OpenAI server, which plays the
simulated user, the agent and the judge by script. Expected values are worked out by hand."""
from __future__ import annotations

import json
import re

import pytest
from django.db.models import Count

from curation.models import Release, ReleaseTest
from evaluation import session_services as SV
from evaluation import sessions as SS
from evaluation.models import AgentMode, ResultState, RunStatus, SessionResult
from evaluation.services import EvaluationError, agent_create, reference_agents_ensure
from generation.models import LLMCall
from tests.evaluation.conftest import APIS
from tests.fake_openai import Reply, fake_openai, openai_settings  # noqa: F401 - fixtures


LATE = [  # conversation 1: look the order up, then refund it
    {"role": "user", "content": "Hi, my order has not arrived."},
    {"role": "assistant", "content": "Can you give me your order ID?"},
    {"role": "user", "content": "It is 812."},
    {"role": "api", "content": "get_order_details(order_id=812)"},
    {"role": "api_output", "content": '{"status": "lost"}'},
    {"role": "assistant", "content": "Your order was lost. Shall I refund it?"},
    {"role": "user", "content": "Yes please."},
    {"role": "api", "content": "refund_order(order_id=812, reason='lost')"},
    {"role": "api_output", "content": '{"refunded": true}'},
    {"role": "assistant", "content": "Your order has been refunded."},
]
CANCEL = [  # conversation 2: cancel straight away
    {"role": "user", "content": "Please cancel order 55."},
    {"role": "api", "content": "cancel_order(order_id=55)"},
    {"role": "api_output", "content": '{"cancelled": true}'},
    {"role": "assistant", "content": "Order 55 is cancelled."},
]
INTENTS = {1: {"name": "late order", "issue": "The customer's order is late."},
           2: {"name": "cancel order", "issue": "The customer wants to cancel an order."}}


def expected_of(msg: dict) -> dict:
    if msg["role"] == "assistant":
        return {"type": "reply", "content": msg["content"]}
    from generation.pipeline.extract import parse_api_call

    name, params = parse_api_call(msg["content"])
    return {"type": "api_call", "name": name, "parameters": params}


def rows_of(conv: int, messages: list[dict]) -> list[dict]:
    """The release rows of one conversation, cut before every agent action as the pipeline does."""
    rows = []
    for i, msg in enumerate(messages):
        if msg["role"] in ("assistant", "api") and messages[i - 1]["role"] in ("user", "api_output"):
            rows.append({"test_id": conv * 100 + i, "conversation_id": conv, "position": i, "intent": INTENTS[conv],
                         "procedure": "Look the order up, then refund or cancel it as the customer asks.",
                         "apis": APIS, "context": messages[:i], "expected": expected_of(msg), "noise_kinds": []})
    return rows


def make_release() -> Release:
    release = Release.objects.create(name="sessions", version=1, content_hash="0" * 64, manifest={})
    for conv, messages in ((1, LATE), (2, CANCEL)):
        for d in rows_of(conv, messages):
            ReleaseTest.objects.create(release=release, test_id=d["test_id"], conversation_id=conv,
                                       position=d["position"], data=d)
    return release


# --------------------------------------------------------------------------- pure parts


def test_task_summary_from_the_release_rows():
    task = SS.session_task(rows_of(1, LATE))
    assert SS.reference_session(rows_of(1, LATE)) == LATE  # the last test's context + its expected reply
    assert task.user_lines == ["Hi, my order has not arrived.", "It is 812.", "Yes please."]
    assert [(c.name, c.parameters, c.output) for c in task.calls] == [
        ("get_order_details", {"order_id": 812}, {"status": "lost"}),
        ("refund_order", {"order_id": 812, "reason": "lost"}, {"refunded": True})]
    assert task.goals == ["The agent handles the customer's request: The customer's order is late.",
                          "The agent calls get_order_details(order_id=812)",
                          "The agent calls refund_order(order_id=812, reason='lost')"]
    with pytest.raises(ValueError, match="no user message"):
        SS.session_task([{"conversation_id": 9, "position": 1, "context": [{"role": "assistant", "content": "Hi"}],
                          "expected": {"type": "reply", "content": "x"}}])


def test_environment_answers_matching_calls_once_and_errors_otherwise():
    task = SS.session_task(rows_of(1, LATE))
    used = [False, False]
    names = [a["name"] for a in APIS]
    assert SS.environment(task, used, SS.Call("GET_ORDER_DETAILS", {"order_id": "812"}), names) == {"status": "lost"}
    assert used == [True, False]
    assert SS.environment(task, used, SS.Call("get_order_details", {"order_id": 812}), names) == {
        "error": "no record matches these parameters"}  # the reference call is used up
    assert SS.environment(task, used, SS.Call("delete_account", {}), names) == {"error": "unknown API 'delete_account'"}


@pytest.mark.parametrize("text,message,why", [
    ("It is 812.", "It is 812.", ""),
    ('Customer: "It is 812."', "It is 812.", ""),
    ("END", None, "the simulated user ended the session"),
    ("Thanks, that is all. END", None, "the simulated user ended the session"),
    ("", None, "the simulated user said nothing"),
])
def test_parse_user_message(text, message, why):
    assert SS.parse_user_message(text) == (message, why)


def test_parse_judge():
    v = SS.parse_judge("Result: **yes**\nTotal number of goals: 3\nNumber of accomplished goals: 3\nReason: all met.", 3)
    assert (v.success, v.total, v.accomplished, v.reason) == (True, 3, 3, "all met.")
    for bad, match in [("It went fine.", "lacks Result"), ("Result: yes\nTotal number of goals: 3\n"
                                                           "Number of accomplished goals: 2", "said yes with 2 of 3"),
                       ("Result: no\nTotal number of goals: 3\nNumber of accomplished goals: 4", "4 of 3"),
                       ("Result: no\nTotal number of goals: 5\nNumber of accomplished goals: 1", "task has 3")]:
        with pytest.raises(SS.JudgeOutputError, match=match):
            SS.parse_judge(bad, 3)


def test_session_metrics_by_hand():
    outcomes = [SS.SessionOutcome(True, 3, 3, 3, {"recalled": 2, "reference": 2, "precise": 2, "predicted": 2}),
                SS.SessionOutcome(False, 2, 1, 1, {"recalled": 0, "reference": 1, "precise": 0, "predicted": 1})]
    m = SS.session_metrics(outcomes, bootstrap=200, seed=3)
    assert (m["success_rate"]["numerator"], m["success_rate"]["denominator"]) == (1, 2)
    assert m["task_progress"]["value"] == pytest.approx(0.75)
    assert m["tool_recall"]["value"] == pytest.approx(2 / 3) and m["tool_precision"]["value"] == pytest.approx(2 / 3)
    assert m["tool_f1"]["value"] == pytest.approx(2 / 3) and m["avg_turns"]["value"] == 2.0
    assert 0 <= m["success_rate"]["ci_low"] <= 0.5 <= m["success_rate"]["ci_high"] <= 1
    assert SS.session_metrics([])["success_rate"]["value"] is None


# --------------------------------------------------------------------------- runs against the fake server

USER_SCRIPT = {"late": ["Hi, my order has not arrived.", "It is 812.", "Yes please."],
               "cancel": ["Please cancel order 55."]}


def conversation_lines(body: dict) -> list[str]:
    text = body["messages"][-1]["content"]
    return text.split("<conversation>\n", 1)[1].split("\n</conversation>", 1)[0].split("\n")


def scripted(judge_replies: dict[str, list[str]] | None = None):
    """The fake endpoint as all three parties; `judge_replies` per case, consumed in order."""
    judge_replies = judge_replies or {
        "late": ["Result: yes\nTotal number of goals: 3\nNumber of accomplished goals: 3\nReason: all done."],
        "cancel": ["I think it went fine.",  # malformed: discarded, the judge is asked again
                   "Result: no\nTotal number of goals: 2\nNumber of accomplished goals: 1\nReason: wrong order id."]}
    judged = {"late": 0, "cancel": 0}

    def handler(body: dict, n: int) -> Reply:
        system = body["messages"][0]["content"]
        if SS.JUDGE_MARKER in system:
            case = "late" if "order is late" in body["messages"][-1]["content"] else "cancel"
            reply = judge_replies[case][min(judged[case], len(judge_replies[case]) - 1)]
            judged[case] += 1
            return Reply(content=reply)
        if SS.USER_MARKER in system:
            case = "late" if "order is late" in system else "cancel"
            said = sum(1 for line in conversation_lines(body) if line.startswith("customer:"))
            script = USER_SCRIPT[case]
            return Reply(content=script[said] if said < len(script) else "END")
        # the agent under test (A.8 JSON answers)
        lines = conversation_lines(body)
        last = lines[-1]
        if last == "user: Hi, my order has not arrived.":
            return Reply(content=json.dumps({"type": "reply", "parameters": {"content": "Your order ID, please?"}}))
        if last == "user: It is 812.":
            return Reply(content=json.dumps({"type": "get_order_details", "parameters": {"order_id": 812}}))
        if last.startswith("api_output:") and "lost" in last:
            return Reply(content=json.dumps({"type": "reply", "parameters": {"content": "It was lost. Refund?"}}))
        if last == "user: Yes please.":
            return Reply(content=json.dumps({"type": "refund_order", "parameters": {"order_id": "812", "reason": "LOST "}}))
        if last.startswith("api_output:") and "refunded" in last:
            return Reply(content=json.dumps({"type": "reply", "parameters": {"content": "Refunded."}}))
        if last == "user: Please cancel order 55.":
            return Reply(content=json.dumps({"type": "cancel_order", "parameters": {"order_id": 56}}))  # wrong id
        if last.startswith("api_output:") and "error" in last:
            return Reply(content="Hmm, I could not find that order.")  # not JSON: unparseable, noted
        return Reply(content=json.dumps({"type": "reply", "parameters": {"content": "Anything else?"}}))

    return handler


@pytest.fixture
def release(db) -> Release:
    return make_release()


def test_a_session_run_gives_the_hand_computed_metrics(release, fake_openai, openai_settings):
    fake_openai.set_handler(scripted())
    agent = agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
    run = SV.session_run_create(agent=agent, release=release, start=False)
    assert run.total == 2 and run.results.filter(state=ResultState.PENDING).count() == 2
    run = SV.session_run_execute_inline(run=run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    m = run.metrics["metrics"]
    assert (m["success_rate"]["numerator"], m["success_rate"]["denominator"]) == (1, 2)
    assert m["task_progress"]["value"] == pytest.approx(0.75)  # (3/3 + 1/2) / 2
    assert (m["tool_recall"]["numerator"], m["tool_recall"]["denominator"]) == (2, 3)
    assert (m["tool_precision"]["numerator"], m["tool_precision"]["denominator"]) == (2, 3)
    assert m["avg_turns"]["value"] == 2.0  # 3 user turns, then 1
    assert m["success_rate"]["ci_low"] is not None and run.metrics["bootstrap"] == 1000
    assert run.metrics["ended_by"] == {"the simulated user ended the session": 2}
    assert run.metrics["unparseable_answers"] == 1
    late, cancel = SessionResult.objects.get(run=run, conversation_id=1), SessionResult.objects.get(run=run, conversation_id=2)
    assert [m["role"] for m in late.transcript] == ["user", "assistant", "user", "api", "api_output", "assistant",
                                                    "user", "api", "api_output", "assistant"]
    assert late.transcript[4]["content"] == '{"status": "lost"}'  # the reference output
    assert late.predicted_calls[1] == {"name": "refund_order", "parameters": {"order_id": "812", "reason": "LOST "}}
    assert (late.success, late.accomplished, late.total_goals, late.turns) == (True, 3, 3, 3)
    assert cancel.transcript[2] == {"role": "api_output", "content": '{"error": "no record matches these parameters"}'}
    assert cancel.transcript[3] == {"role": "assistant", "content": "Hmm, I could not find that order."}
    assert any("judge answer discarded" in n and "lacks Result" in n for n in cancel.notes)
    assert any("unparseable answer" in n for n in cancel.notes)
    assert cancel.judge_reason == "wrong order id." and cancel.tools == {"recalled": 0, "reference": 1, "precise": 0,
                                                                           "predicted": 1}
    # every call of the three parties is logged: 7 agent calls (5 in the first session, 2 in the second),
    # 6 user turns (4 lines + 2 ENDs), 3 verdicts (one discarded)
    stages = dict(LLMCall.objects.values_list("stage").annotate(n=Count("id")).values_list("stage", "n"))
    assert stages == {"evaluation": 7, "session-user": 6, "session-judge": 3}


def test_the_turn_limit_counts_as_a_failure(release, fake_openai, openai_settings):
    fake_openai.set_handler(scripted())
    agent = agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
    run = SV.session_run_execute_inline(run=SV.session_run_create(agent=agent, release=release, max_turns=2,
                                                                    limit=1, start=False))
    late = run.results.get()
    assert late.turns == 2 and late.ended_by == "reached the limit of 2 user turns"
    assert not late.success and any("counted as a failure" in n for n in late.notes)
    assert run.metrics["metrics"]["success_rate"]["value"] == 0.0


def test_failures_are_recorded_and_resumed(release, fake_openai, openai_settings, settings):
    settings.LLM_MAX_RETRIES = 0
    always_malformed = {"late": ["Result: maybe"], "cancel": ["Result: maybe"]}
    fake_openai.set_handler(scripted(always_malformed))
    agent = agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
    run = SV.session_run_execute_inline(run=SV.session_run_create(agent=agent, release=release, start=False))
    assert run.status == RunStatus.FAILED and "2 session(s) could not be completed" in run.error
    failed = run.results.get(conversation_id=1)
    assert failed.state == ResultState.FAILED and "JudgeOutputError" in failed.error
    fake_openai.set_handler(scripted())
    run = SV.session_run_execute_inline(run=run)  # resumes the failed sessions
    assert run.status == RunStatus.SUCCEEDED and run.results.filter(state=ResultState.DONE).count() == 2
    assert SessionResult.objects.filter(run=run).count() == 2  # no duplicates


def test_refusals(release, fake_openai, openai_settings, settings):
    with pytest.raises(EvaluationError, match="needs an LLM agent"):
        SV.session_run_create(agent=reference_agents_ensure()[0], release=release)
    agent = agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
    with pytest.raises(EvaluationError, match="max turns"):
        SV.session_run_create(agent=agent, release=release, max_turns=0)
    settings.OPENAI_BASE_URL = ""
    with pytest.raises(EvaluationError, match="simulated user and the judge"):
        SV.session_run_create(agent=agent, release=release)


def test_conversations_without_a_user_line_are_skipped(db, fake_openai, openai_settings):
    release = make_release()
    ReleaseTest.objects.create(release=release, test_id=999, conversation_id=3, position=1, data={
        "conversation_id": 3, "position": 1, "context": [{"role": "assistant", "content": "Hello"}],
        "expected": {"type": "reply", "content": "Hi"}, "apis": APIS, "procedure": "x", "intent": INTENTS[1]})
    agent = agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
    run = SV.session_run_create(agent=agent, release=release, start=False)
    assert run.total == 2 and run.metrics["skipped_conversations"] == [3]


# --------------------------------------------------------------------------- pages

def session_pages(run) -> list[tuple[str, str]]:
    from django.urls import reverse

    return [("get", reverse("evaluation:sessions")), ("post", reverse("evaluation:session_create")),
            ("get", reverse("evaluation:session_compare") + f"?runs={run.pk}"),
            ("get", reverse("evaluation:session_detail", args=[run.pk])),
            ("get", reverse("evaluation:session_status", args=[run.pk])),
            ("post", reverse("evaluation:session_cancel", args=[run.pk])),
            ("post", reverse("evaluation:session_resume", args=[run.pk]))]


@pytest.mark.parametrize("persona", ["anonymous", "annotator", "adjudicator", "outsider"])
def test_session_pages_check_the_role(client, personas, release, fake_openai, openai_settings, persona):
    from tests.conftest import PASSWORD

    agent = agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
    run = SV.session_run_create(agent=agent, release=release, start=False)
    if persona != "anonymous":
        assert client.login(username=personas[persona].username, password=PASSWORD)
    for method, url in session_pages(run):
        response = getattr(client, method)(url)
        if persona == "anonymous":
            assert response.status_code == 302 and "/login/" in response["Location"], url
        else:
            assert response.status_code == 403, url
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED  # nothing was cancelled or resumed


def test_session_run_through_the_pages(client, researcher, release, fake_openai, openai_settings,
                                       django_capture_on_commit_callbacks):
    from django.urls import reverse

    from evaluation.models import SessionRun
    from tests.conftest import PASSWORD

    judge = {"late": ["Result: yes\nTotal number of goals: 3\nNumber of accomplished goals: 3\n"
                      "Reason: <script>alert(1)</script> all done."],
             "cancel": ["Result: no\nTotal number of goals: 2\nNumber of accomplished goals: 1\nReason: wrong id."]}
    fake_openai.set_handler(scripted(judge))
    agent = agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
    assert client.login(username=researcher.username, password=PASSWORD)
    page = client.get(reverse("evaluation:sessions")).content.decode()
    assert "Start the sessions" in page and "Reference: gold" not in page  # only LLM agents can converse
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(reverse("evaluation:session_create"), {
            "agent": agent.pk, "release": release.pk, "max_turns": 15, "limit": "", "concurrency": 2})
    run = SessionRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("evaluation:session_detail", args=[run.pk])
    assert run.status == RunStatus.RUNNING and run.concurrency == 2 and len(callbacks) == 1
    bad = client.post(reverse("evaluation:session_create"), {"agent": agent.pk, "release": release.pk,
                                                             "max_turns": 99}, follow=True)
    assert "could not be created" in bad.content.decode() and SessionRun.objects.count() == 1
    SV.session_run_execute_inline(run=run)
    html = client.get(reverse("evaluation:session_detail", args=[run.pk])).content.decode()
    assert "Succeeded" in html and "Success rate" in html and "<strong>50.0</strong>" in html and "1/2" in html
    assert "<strong>75.0</strong>" in html and "<strong>2.00</strong>" in html  # task progress, mean turns
    assert "&lt;script&gt;alert(1)&lt;/script&gt; all done." in html and "<script>alert(1)" not in html
    assert "get_order_details(order_id=812)" in html  # the transcript
    fragment = client.get(reverse("evaluation:session_status", args=[run.pk])).content.decode()
    assert 'data-active="0"' in fragment and "2 sessions judged" in fragment
    listing = client.get(reverse("evaluation:sessions")).content.decode()
    assert f"#{run.pk}" in listing and "1/2" in listing


def test_evaluate_sessions_command(release, fake_openai, openai_settings, capsys):
    from django.core.management import CommandError, call_command

    fake_openai.set_handler(scripted())
    agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
    call_command("evaluate_sessions", "--release", "sessions", "--agent", "scripted", "--inline")
    out = capsys.readouterr().out
    assert "2 conversations, at most 15 user turns" in out and "succeeded" in out
    assert "Success rate" in out and "50.0%" in out and "1/2" in out and "Tool recall" in out and "2/3" in out
    with pytest.raises(CommandError, match="needs an LLM agent"):
        call_command("evaluate_sessions", "--release", "sessions", "--agent", "gold", "--inline")


@pytest.mark.parametrize("who", ["researcher", "admin", "annotator", "outsider", "anonymous"])
def test_session_api(personas, release, fake_openai, openai_settings, who, django_capture_on_commit_callbacks):
    from rest_framework.test import APIClient

    agent = agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
    c = APIClient()
    if who != "anonymous":
        c.force_authenticate(personas[who])
    allowed = who in ("researcher", "admin")
    with django_capture_on_commit_callbacks(execute=False):
        r = c.post("/api/session-runs/", {"agent": agent.pk, "release": release.pk, "limit": 1}, format="json")
    assert r.status_code == (201 if allowed else 401 if who == "anonymous" else 403), r.content
    if not allowed:
        assert c.get("/api/session-runs/").status_code in (401, 403)
        return
    body = r.json()
    assert body["status"] == "running" and body["total"] == 1 and body["max_turns"] == 15
    assert c.post(f"/api/session-runs/{body['id']}/cancel/").json()["status"] == "cancelled"
    assert c.post(f"/api/session-runs/{body['id']}/cancel/").status_code == 409
    gold = reference_agents_ensure()[0]
    r = c.post("/api/session-runs/", {"agent": gold.pk, "release": release.pk}, format="json")
    assert r.status_code == 400 and "agent" in r.json()  # reference agents cannot converse
    assert [x["id"] for x in c.get(f"/api/session-runs/?release={release.pk}").json()["results"]] == [body["id"]]


def test_session_constraints(release, fake_openai, openai_settings):
    from django.db import IntegrityError, transaction

    from evaluation.models import SessionRun

    agent = agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
    run = SV.session_run_create(agent=agent, release=release, start=False)
    for bad in (lambda: SessionResult.objects.create(run=run, conversation_id=1),  # one session per conversation
                lambda: SessionResult.objects.create(run=run, conversation_id=7, total_goals=2, accomplished=3),
                lambda: SessionRun.objects.filter(pk=run.pk).update(max_turns=0),
                lambda: SessionRun.objects.filter(pk=run.pk).update(done=run.total + 1)):
        with pytest.raises(IntegrityError), transaction.atomic():
            bad()


def test_compare_session_runs(client, researcher, personas, release, fake_openai, openai_settings):
    from django.urls import reverse

    from tests.conftest import PASSWORD

    fake_openai.set_handler(scripted())
    agent = agent_create(name="scripted <i>", mode=AgentMode.PROMPT, model="fake-model")
    first = SV.session_run_execute_inline(run=SV.session_run_create(agent=agent, release=release, start=False))
    fake_openai.set_handler(scripted())  # fresh judge script for the second run
    second = SV.session_run_execute_inline(run=SV.session_run_create(agent=agent, release=release, limit=1,
                                                                       start=False))
    url = reverse("evaluation:session_compare")
    assert client.login(username=personas["annotator"].username, password=PASSWORD)
    assert client.get(url, {"runs": [first.pk, second.pk]}).status_code == 403
    assert client.login(username=researcher.username, password=PASSWORD)
    html = client.get(url, {"runs": [first.pk, second.pk]}).content.decode()
    assert html.count("<svg") == 1 and "scripted &lt;i&gt;" in html and "<i>" not in html.split("<main>")[1]
    values = re.findall(r'data-value="([\d.]+)"', html)
    # first run: success 50, progress 75, precision 66.7, recall 66.7, F1 66.7; second (the late order only): 100 x 5
    assert values == ["50.0", "100.0", "75.0", "100.0", "66.7", "100.0", "66.7", "100.0", "66.7", "100.0"], values
    assert "1/2" in html and "1/1" in html
    assert "Pick at least two" in client.get(url, {"runs": ["x"]}).content.decode()
    listing = client.get(reverse("evaluation:sessions")).content.decode()
    assert 'name="runs"' in listing and "Compare the selected session runs" in listing

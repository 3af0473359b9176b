"""Session-level evaluation (FlowBench): task summaries, the simulated user, the environment, the
judge and the metrics, then whole session runs against the fake OpenAI server, which plays the
simulated user, the agent and the judge by script. Expected values are worked out by hand."""
from __future__ import annotations

import json

import pytest
from django.db.models import Count

from curation.models import Release, ReleaseTest
from evaluation import session_services as SV
from evaluation import sessions as SS
from evaluation.models import AgentMode, ResultState, RunStatus, SessionResult
from evaluation.services import EvaluationError, agent_create, reference_agents_ensure
from generation.models import LLMCall
from tests.fake_openai import Reply, fake_openai, openai_settings  # noqa: F401 - fixtures

APIS = [
    {"name": "get_order_details", "desc": "Look an order up", "params": [{"name": "order_id", "type": "int", "required": True}],
     "output": {"name": "order", "type": "dict"}},
    {"name": "refund_order", "desc": "Refund an order",
     "params": [{"name": "order_id", "type": "int", "required": True}, {"name": "reason", "type": "str", "required": True}],
     "output": {"name": "refunded", "type": "bool"}},
    {"name": "cancel_order", "desc": "Cancel an order", "params": [{"name": "order_id", "type": "int", "required": True}],
     "output": {"name": "cancelled", "type": "bool"}},
]

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

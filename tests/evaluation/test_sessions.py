"""Session-level evaluation (FlowBench): task summaries, the simulated user, the environment, the
judge and the metrics, then whole session runs against the fake OpenAI server, which plays the
simulated user, the agent and the judge by script. Expected values are worked out by hand."""
from __future__ import annotations

import pytest
from django.db.models import Count

from curation.models import ReleaseTest
from evaluation import session_services as SV
from evaluation import sessions as SS
from evaluation.models import AgentMode, ResultState, RunStatus, SessionResult
from evaluation.services import EvaluationError, agent_create, reference_agents_ensure
from generation.models import LLMCall
from tests.evaluation.conftest import APIS
from tests.evaluation.sessions_script import INTENTS, LATE, make_release, release, rows_of, scripted  # noqa: F401
from tests.fake_openai import fake_openai, openai_settings  # noqa: F401 - fixtures


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

"""The audited cases of docs/metrics.md, one test each: failed calls count as wrong, every common
answer shape is read, a real API is never shadowed by a reply synonym, exact comparison by default
with the lenient one as a named option, and the similarity/comparison in every report and export."""
from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from evaluation import reader as A
from evaluation import metrics as M
from evaluation import services
from evaluation.models import AgentMode, RunStatus
from tests.evaluation.conftest import EXPECTED, EXPECTED_LENIENT, SCRIPT, which_test
from tests.fake_openai import Reply, fake_openai, openai_settings  # noqa: F401 - fixtures

R, C = M.REPLY, M.API_CALL


# --------------------------------------------------------------------------- failed calls (pure)


def test_a_failed_test_is_wrong_and_spoils_its_conversation():
    ok = M.judge({"type": R, "content": "hi"}, {"type": R, "content": "hi"}, similarity=1.0, conversation_id=1)
    failed = M.unanswered({"type": C, "name": "get_order", "parameters": {}}, conversation_id=1)
    m = M.compute_metrics([ok, failed])
    # Before the fix the failed test was dropped: 1/1 tests and 1/1 conversations.
    assert (m["test_correct"].numerator, m["test_correct"].denominator) == (1, 2)
    assert (m["conversation_correct"].numerator, m["conversation_correct"].denominator) == (0, 1)
    assert (m["api_recall"].numerator, m["api_recall"].denominator) == (0, 1)
    a = M.compute_metrics(M.answered_only([ok, failed]))
    assert (a["test_correct"].numerator, a["test_correct"].denominator) == (1, 1)
    assert a["conversation_correct"].numerator == 1 and a["api_recall"].denominator == 0


# --------------------------------------------------------------------------- answer shapes (pure)

SHAPES = [
    ('{"type": "api_call", "name": "get_order", "arguments": {"order_id": 812}}', "get_order", {"order_id": 812}),
    ('{"type": "api_call", "name": "get_order", "arguments": "{\\"order_id\\": 812}"}', "get_order", {"order_id": 812}),
    ('{"type": "function_call", "name": "get_order", "parameters": {"order_id": 812}}', "get_order", {"order_id": 812}),
    ('{"type": "tool_use", "name": "get_order", "input": {"order_id": 812}}', "get_order", {"order_id": 812}),
    ('{"type": "function", "function": {"name": "get_order", "arguments": "{\\"order_id\\": 812}"}}', "get_order",
     {"order_id": 812}),
    ('{"tool_calls": [{"function": {"name": "get_order", "arguments": "{\\"order_id\\": 812}"}}]}', "get_order",
     {"order_id": 812}),
    ('{"name": "get_order", "arguments": {"order_id": 812}}', "get_order", {"order_id": 812}),
    ('{"type": "get_order", "parameters": {"order_id": 812}}', "get_order", {"order_id": 812}),
    ('{"type": "api_call", "parameters": {"name": "get_order", "parameters": {"order_id": 812}}}', "get_order",
     {"order_id": 812}),
]


@pytest.mark.parametrize("text,name,params", SHAPES)
def test_every_common_call_shape_keeps_its_parameters(text, name, params):
    assert A.read_json_prompt(text) == {"type": C, "name": name, "parameters": params}


@pytest.mark.parametrize("text", [
    '{"type": "reply", "parameters": {"content": "Your order id?"}}',
    '{"type": "reply", "content": "Your order id?"}',
    '{"type": "message", "text": "Your order id?"}',
    '{"content": "Your order id?"}',
])
def test_reply_shapes(text):
    assert A.read_json_prompt(text) == {"type": R, "content": "Your order id?"}


@pytest.mark.parametrize("api", ["send_message", "answer", "say"])
def test_a_real_api_named_like_a_reply_synonym_is_a_call(api):
    text = '{"type": "%s", "parameters": {"message": "Your parcel left today"}}' % api
    assert A.read_json_prompt(text, [api, "get_order"]) == {
        "type": C, "name": api, "parameters": {"message": "Your parcel left today"}}
    # Without such an API it is still read as a reply.
    assert A.read_json_prompt(text, ["get_order"])["type"] == R
    # The A.8 reply type itself always means a reply.
    assert A.read_json_prompt('{"type": "reply", "parameters": {"content": "hi"}}', ["reply"])["type"] == R


# --------------------------------------------------------------------------- exact comparison (pure)


def test_api_names_compare_exactly_and_lenient_is_named():
    expected = {"type": C, "name": "get_order_details", "parameters": {"order_id": 812}}
    called = {"type": C, "name": "Get_Order_Details", "parameters": {"order_id": 812}}
    assert not M.judge(expected, called).api_correct
    assert M.judge(expected, called, comparison=M.LENIENT).api_correct


def test_values_compare_by_json_type_and_value():
    assert not M.params_match({"order_id": 812}, {"order_id": "812"})
    assert M.params_match({"order_id": 812}, {"order_id": "812"}, M.LENIENT)
    assert not M.params_match({"amount": 12.5, "ok": True}, {"amount": "12.50", "ok": "true"})
    assert M.params_match({"amount": 12.5, "ok": True}, {"amount": "12.50", "ok": "true"}, M.LENIENT)
    assert M.params_match({"n": 3}, {"n": 3.0})
    assert not M.params_match({"order_id": "AB12cd"}, {"order_id": "ab12CD"})
    assert M.params_match({"order_id": "AB12cd"}, {"order_id": "ab12CD"}, M.LENIENT)
    assert not M.params_match({"zip": "0812"}, {"zip": 812})  # a leading zero is part of a string
    assert not M.params_match({"Order_ID": 1}, {"order_id": 1})  # parameter names exactly too
    with pytest.raises(ValueError):
        M.params_match({}, {}, "fuzzy")


# --------------------------------------------------------------------------- runs


def _prompt_agent():
    return services.agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")


@pytest.mark.django_db
def test_a_run_with_a_failed_call_is_incomplete_and_shows_both_figures(small_release, fake_openai, openai_settings,
                                                                       client, researcher):
    def handler(body, n):
        t = which_test(body)
        return Reply.client_error(400, "context too long") if t == 1 else Reply(content=SCRIPT[t])

    fake_openai.set_handler(handler)
    run = services.run_create(agent=_prompt_agent(), release=small_release, similarity="lexical", start=False)
    run = services.run_execute_inline(run=run, workers=1)
    assert run.status == RunStatus.FAILED and "count as wrong" in run.error
    report = run.metrics
    assert report["complete"] is False and report["unanswered"] == 1 and report["failed"] == 1
    over_all = {k: (v["numerator"], v["denominator"]) for k, v in report["metrics"].items()}
    answered = {k: (v["numerator"], v["denominator"]) for k, v in report["metrics_answered"].items()}
    # t1 (a correct reply in conversation 101) failed: wrong over all tests, absent over the answered.
    assert over_all["reply_recall"] == (2, 5) and over_all["test_correct"] == (2, 10)
    assert over_all["conversation_correct"] == (1, 4)
    assert answered["reply_recall"] == (2, 4) and answered["test_correct"] == (2, 9)
    assert answered["conversation_correct"] == (1, 4)
    client.force_login(researcher)
    page = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert "Incomplete run:" in page and "over the answered tests only" in page


@pytest.mark.django_db
def test_lenient_comparison_is_a_run_option_and_is_reported(small_release, fake_openai, openai_settings, client,
                                                            researcher):
    fake_openai.set_handler(lambda body, n: Reply(content=SCRIPT[which_test(body)]))
    agent = _prompt_agent()
    exact = services.run_execute_inline(run=services.run_create(
        agent=agent, release=small_release, similarity="lexical", start=False), workers=1)
    lenient = services.run_execute_inline(run=services.run_create(
        agent=agent, release=small_release, similarity="lexical", comparison=M.LENIENT, start=False), workers=1)
    counts = lambda run: {k: (v["numerator"], v["denominator"]) for k, v in run.metrics["metrics"].items()}  # noqa: E731
    assert counts(exact) == EXPECTED and counts(lenient) == EXPECTED_LENIENT
    assert lenient.metrics["comparison"] == "lenient" and exact.metrics["comparison"] == "exact"
    client.force_login(researcher)
    page = client.get(reverse("evaluation:run_detail", args=[lenient.pk])).content.decode()
    assert "API comparison: <strong>lenient" in page and "Reply similarity: <strong>lexical" in page
    body = b"".join(client.get(reverse("evaluation:run_results_csv", args=[lenient.pk])).streaming_content)
    rows = list(csv.DictReader(io.StringIO(body.decode("utf-8-sig"))))
    assert {(r["similarity_method"], r["comparison"]) for r in rows} == {("lexical", "lenient")}


@pytest.mark.django_db
def test_unknown_comparison_is_refused(small_release):
    gold = services.reference_agents_ensure()[0]
    with pytest.raises(services.EvaluationError, match="unknown comparison"):
        services.run_create(agent=gold, release=small_release, similarity="lexical", comparison="fuzzy", start=False)


@pytest.mark.django_db
def test_the_run_form_and_the_api_take_comparison_trials_and_dst(client, researcher, small_release):
    gold = services.reference_agents_ensure()[0]
    client.force_login(researcher)
    response = client.post(reverse("evaluation:run_create"), {
        "agent": gold.pk, "release": small_release.pk, "similarity": "lexical", "comparison": "lenient",
        "trials": "1", "dst": "on"})
    assert response.status_code == 302
    from evaluation.models import EvaluationRun

    run = EvaluationRun.objects.latest("id")
    assert (run.comparison, run.trials, run.dst) == ("lenient", 1, True)
    response = client.post("/api/evaluation-runs/", {"agent": gold.pk, "release": small_release.pk,
                                                     "similarity": "lexical", "comparison": "exact", "trials": 2},
                           content_type="application/json")
    assert response.status_code == 201, response.content
    assert (response.json()["comparison"], response.json()["trials"]) == ("exact", 2)

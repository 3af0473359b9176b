"""Runs through the service, synchronously, against the local fake OpenAI server."""
from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from evaluation import services
from evaluation.metrics import METRIC_KEYS
from evaluation.models import Agent, AgentMode, EvaluationRun, ResultState, RunStatus, TestResult
from generation.models import LLMCall
from tests.evaluation.conftest import EXPECTED, SCRIPT, TESTS, make_release, scripted_agent, which_test
from tests.fake_openai import Reply, fake_openai, openai_settings  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db


def counts(run: EvaluationRun) -> dict[str, tuple[int, int]]:
    m = run.metrics["metrics"]
    return {k: (m[k]["numerator"], m[k]["denominator"]) for k in METRIC_KEYS}


def evaluate(agent: Agent, release, **kw) -> EvaluationRun:
    run = services.run_create(agent=agent, release=release, similarity="lexical", start=False, **kw)
    return services.run_execute_inline(run=run, workers=1)


def prompt_agent(**kw) -> Agent:
    return services.agent_create(name=kw.pop("name", "scripted"), mode=kw.pop("mode", AgentMode.PROMPT),
                                 model="fake-model", **kw)


def test_scripted_agent_gives_the_hand_computed_metrics(small_release, fake_openai, openai_settings):
    fake_openai.set_handler(scripted_agent)
    run = evaluate(prompt_agent(), small_release)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert counts(run) == EXPECTED
    assert run.done == run.total == 10
    assert TestResult.objects.filter(run=run).count() == 10
    # every request is the A.8-style prompt with the procedure, the actions and the conversation
    assert fake_openai.request_count == 10
    body = fake_openai.requests[0]
    system = body["messages"][0]["content"]
    assert "<procedure>" in system and "get_order_details" in system and '"type": "reply"' in system
    assert body["messages"][1]["content"].startswith("<conversation>")
    assert "tools" not in body
    # confidence intervals were computed and bracket the value
    for key in METRIC_KEYS:
        m = run.metrics["metrics"][key]
        assert m["ci_low"] <= m["value"] <= m["ci_high"]
    # per-test flags and reasons
    by_test = {r.entry.test_id: r for r in run.results.select_related("entry")}
    assert by_test[2].params_correct and by_test[2].correct
    assert by_test[7].predicted_type == "invalid" and not by_test[7].correct
    assert "not a JSON object" in by_test[7].error
    assert by_test[7].raw_reply == SCRIPT[7]
    assert by_test[8].api_correct and not by_test[8].params_correct
    assert by_test[9].api_recalled and not by_test[9].api_correct
    assert by_test[1].similarity == pytest.approx(1.0)
    assert by_test[6].reply_recalled and not by_test[6].reply_correct
    # the noise breakdown isolates conversation 103
    noise = run.metrics["by_noise"]
    assert noise["out_of_procedure"]["test_correct"]["numerator"] == 0
    assert noise["out_of_procedure"]["test_correct"]["denominator"] == 3
    assert noise["no noise"]["test_correct"]["denominator"] == 7
    stage = run.metrics["by_stage"]
    assert sum(stage[s]["test_correct"]["denominator"] for s in stage) == 10
    assert run.metrics["similarity"] == "lexical" and run.metrics["unparseable"] == 1


def test_gold_agent_scores_100_percent(small_release):
    gold = services.reference_agents_ensure()[0]
    assert gold.mode == AgentMode.GOLD
    run = evaluate(gold, small_release)
    assert run.status == RunStatus.SUCCEEDED
    for key, (num, den) in counts(run).items():
        assert den > 0 and num == den, key


def test_reference_agents_always_reply_and_first_api(small_release):
    _gold, always_reply, first_api = services.reference_agents_ensure()
    r = counts(evaluate(always_reply, small_release))
    assert r["reply_recall"] == (5, 5) and r["api_recall"] == (0, 5)
    assert r["api_correct"] == (0, 0) and r["params_correct"] == (0, 0)
    f = counts(evaluate(first_api, small_release))
    assert f["reply_recall"] == (0, 5) and f["api_recall"] == (5, 5)
    # the first API is get_order_details: expected on t2, t4, t9; it never passes parameters
    assert f["api_correct"] == (3, 5) and f["params_correct"] == (0, 3)
    assert f["test_correct"] == (0, 10) and f["conversation_correct"] == (0, 4)


def test_function_calling_replies_are_parsed(small_release, fake_openai, openai_settings):
    def handler(body, n):
        t = which_test(body)
        if t == 2:
            return Reply(tool_calls=[{"name": "get_order_details", "arguments": {"order_id": 812}}])
        if t == 5:  # two calls at once: the first one is scored
            return Reply(tool_calls=[{"name": "refund_order", "arguments": '{"order_id": 900, "reason": "damaged"}'},
                                     {"name": "cancel_order", "arguments": '{"order_id": 900}'}])
        if t == 8:  # broken JSON arguments: wrong, with the reason
            return Reply(tool_calls=[{"name": "cancel_order", "arguments": '{"order_id": 55'}])
        if t == 4:
            return Reply(content=None, tool_calls=None)
        return Reply(content="Can you give me your order ID?")

    fake_openai.set_handler(handler)
    run = evaluate(prompt_agent(name="fc", mode=AgentMode.FUNCTIONS, knowledge="mermaid"), small_release)
    body = fake_openai.requests[0]
    names = [t["function"]["name"] for t in body["tools"]]
    assert names == ["get_order_details", "refund_order", "cancel_order"]
    assert body["tools"][1]["function"]["parameters"]["required"] == ["order_id", "reason"]
    assert body["tools"][0]["function"]["parameters"]["properties"]["order_id"]["type"] == "integer"
    assert "flowchart TD" in body["messages"][0]["content"]  # knowledge as Mermaid
    by_test = {r.entry.test_id: r for r in run.results.select_related("entry")}
    assert by_test[2].correct and by_test[2].parsed["parameters"] == {"order_id": 812}
    assert by_test[5].correct and "the first is scored" in by_test[5].error
    assert by_test[8].predicted_type == "invalid" and "not valid JSON" in by_test[8].error
    assert by_test[4].predicted_type == "invalid" and "neither text nor a tool call" in by_test[4].error
    assert by_test[1].correct and json.loads(by_test[2].raw_reply)["tool_calls"][0]["name"] == "get_order_details"


def test_transient_faults_are_retried_and_hard_failures_recorded_then_resumed(small_release, fake_openai, settings,
                                                                             openai_settings):
    settings.LLM_MAX_RETRIES = 2
    state = {"broken": True}

    def handler(body, n):
        t = which_test(body)
        if n in (0, 1):  # two transient faults first: retried by llm.chat, nothing lost
            return Reply.rate_limited(0.01) if n == 0 else Reply.server_error(503)
        if t == 3 and state["broken"]:
            return Reply.client_error(400, "context too long")
        return Reply(content=SCRIPT[t])

    fake_openai.set_handler(handler)
    run = evaluate(prompt_agent(), small_release)
    assert run.status == RunStatus.FAILED and "1 test(s) got no answer" in run.error
    failed = run.results.get(state=ResultState.FAILED)
    assert failed.entry.test_id == 3 and "HTTP 400" in failed.error
    assert LLMCall.objects.filter(stage="evaluation", outcome="retried").count() == 2
    asked = fake_openai.request_count
    state["broken"] = False
    run, lanes = services.run_resume(run=run, dispatch=False)
    assert lanes == 1
    run = services.run_execute_inline(run=run, workers=1)
    assert run.status == RunStatus.SUCCEEDED
    assert fake_openai.request_count == asked + 1  # only the failed test was asked again
    assert counts(run) == EXPECTED


def test_no_endpoint_fails_the_run_with_a_clear_message(small_release, fake_openai, openai_settings, settings):
    agent = prompt_agent()
    run = services.run_create(agent=agent, release=small_release, similarity="lexical", start=False)
    settings.OPENAI_BASE_URL = ""
    run = services.run_execute_inline(run=run, workers=1)
    assert run.status == RunStatus.FAILED and "OPENAI_BASE_URL" in run.error
    assert run.results.filter(state=ResultState.PENDING).count() == 10


def test_cancel_stops_and_resume_finishes(small_release):
    gold = services.reference_agents_ensure()[0]
    run = services.run_create(agent=gold, release=small_release, similarity="lexical", start=False)
    services.run_start(run_id=run.pk, dispatch=False)
    assert services.run_step(run_id=run.pk)
    services.run_cancel(run=run)
    assert not services.run_step(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.done == 1
    run = services.run_execute_inline(run=run, workers=1)
    assert run.status == RunStatus.SUCCEEDED and run.done == 10
    assert TestResult.objects.filter(run=run).count() == 10


def test_a_stale_lane_cannot_overwrite_or_double_count(small_release):
    gold = services.reference_agents_ensure()[0]
    run = services.run_create(agent=gold, release=small_release, similarity="lexical", start=False)
    services.run_start(run_id=run.pk, dispatch=False)
    claimed = services.runs._claim(run.pk)
    # the claim goes stale (its lane died), another lane takes the test over
    TestResult.objects.filter(pk=claimed.pk).update(state=ResultState.PENDING, claimed_at=None)
    run = services.run_execute_inline(run=run, workers=1)
    assert run.done == 10 and run.status == RunStatus.SUCCEEDED


def test_empty_release_and_missing_extra_are_refused(db):
    from curation.models import Release
    from evaluation import similarity as S

    empty = Release.objects.create(name="empty", version=1, content_hash="x", manifest={})
    with pytest.raises(services.EvaluationError):
        services.run_create(agent=services.reference_agents_ensure()[0], release=empty, start=False)
    if not S.bertscore_available():
        rel = make_release(name="r2")
        with pytest.raises(S.SimilarityUnavailable):
            services.run_create(agent=services.reference_agents_ensure()[0], release=rel, similarity="bertscore")


def test_evaluate_command_prints_the_metric_table(small_release, capsys):
    call_command("evaluate", "--release", "hand-made", "--agent", "gold", "--inline", "--similarity", "lexical",
                 "--concurrency", "1")
    out = capsys.readouterr().out
    assert "Reply recall" in out and "Conversation correctness" in out and "4/4" in out and "10/10" in out
    assert "lexical" in out


def test_releases_compare_gives_points_and_correlations(db):
    curated, automatic = make_release(name="cur"), make_release(name="auto", kind="automatic",
                                                                tests=TESTS[:6])
    for agent in services.reference_agents_ensure():
        for rel in (curated, automatic):
            evaluate(agent, rel)
    result = services.releases_compare(release_a=curated, release_b=automatic)
    assert [p["label"] for p in result["points"]] == sorted(p["label"] for p in result["points"])
    assert len(result["points"]) == 3
    gold = next(p for p in result["points"] if "gold" in p["label"])
    assert gold["x"] == gold["y"] == 100.0
    assert result["pearson"] is not None and -1 <= result["pearson"] <= 1


def test_release_rows_in_the_curation_shape(fake_openai, openai_settings):
    """Release rows carry the procedure as {"id","title","text"} and only the flowgraph's id:
    graph knowledge is rendered from the Flowgraph row."""
    from curation.models import Release, ReleaseTest
    from generation.models import Flowgraph, Intent, Procedure
    from tests.evaluation.conftest import APIS, FLOWGRAPH

    intent = Intent.objects.create(client="a shop", issue="late order", name="late order")
    proc = Procedure.objects.create(intent=intent, title="Late orders", text="Look the order up first.")
    fg = Flowgraph.objects.create(procedure=proc, data=FLOWGRAPH)
    release = Release.objects.create(name="shape", version=1, content_hash="1" * 64, manifest={})
    ReleaseTest.objects.create(release=release, test_id=1, conversation_id=1, position=1, data={
        "test_id": 1, "conversation_id": 1, "position": 1, "procedure": {"id": proc.pk, "title": proc.title, "text": proc.text},
        "apis": APIS, "context": [{"role": "user", "content": "Hi [t1]"}],
        "expected": {"type": "reply", "content": "Can you give me your order ID?"}, "noise_kinds": [],
        "flowgraph_id": fg.pk})
    fake_openai.set_handler(lambda body, n: Reply(content=SCRIPT[1]))
    for knowledge, marker in (("procedure", "Late orders\n\nLook the order up first."), ("code", "def step_n0():")):
        agent = prompt_agent(name=f"shape-{knowledge}", knowledge=knowledge)
        run = evaluate(agent, release)
        assert run.status == RunStatus.SUCCEEDED and run.metrics["metrics"]["test_correct"]["numerator"] == 1
        assert marker in fake_openai.requests[-1]["messages"][0]["content"]


def test_agent_keys_come_only_from_api_key_variables(monkeypatch, settings):
    monkeypatch.setenv("PROXY_API_KEY", "proxy-secret")
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    with pytest.raises(services.EvaluationError):
        services.agent_create(name="leaky", api_key_env="SECRET_KEY")
    default = services.agent_create(name="default")
    assert services.agent_api_key(default) is None  # the settings key, to the settings endpoint
    other = services.agent_create(name="other", base_url="http://127.0.0.1:8/v1")
    assert services.agent_api_key(other) == ""  # the default key never goes to another endpoint
    proxy = services.agent_create(name="proxy", base_url="http://127.0.0.1:8/v1", api_key_env="PROXY_API_KEY")
    assert services.agent_api_key(proxy) == "proxy-secret"
    Agent.objects.filter(pk=proxy.pk).update(api_key_env="DATABASE_URL")  # e.g. edited in the admin
    proxy.refresh_from_db()
    assert services.agent_api_key(proxy) == ""

"""Action prediction, dialogue-state tracking and repeated trials on hand-made runs, against the
fake OpenAI server; every expected number is worked out by hand in the comments."""
from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction

import pytest
from django.core.management import call_command
from django.urls import reverse

from curation.models import Release, ReleaseTest
from evaluation import dst as D
from evaluation import services
from evaluation import trials as T
from evaluation.models import AgentMode
from evaluation.services import lifecycle
from tests.evaluation.conftest import APIS, PROCEDURE, TESTS, make_release, which_test
from tests.fake_openai import Reply, fake_openai, openai_settings  # noqa: F401 - fixtures

U = lambda text: {"role": "user", "content": text}  # noqa: E731
S = lambda text: {"role": "assistant", "content": text}  # noqa: E731
C1 = [U("I didn't receive my order")]
C2 = C1 + [S("Can you give me the order ID?"), U("The order ID is #812")]
C3 = C2 + [{"role": "api", "content": "get_order_details(order_id=812)"},
           {"role": "api_output", "content": '{"sent_status": [{"item": "Lamp", "status": "shipped"}]}'}]
C4 = [U("Please refund order 900, it arrived damaged")]
CALL812 = {"type": "api_call", "name": "get_order_details", "parameters": {"order_id": 812}}
CALL900 = {"type": "api_call", "name": "refund_order", "parameters": {"order_id": 900, "reason": "damaged"}}
DST_TESTS = [  # test id, conversation, position, context, expected
    (21, 201, 1, C1, {"type": "reply", "content": "Can you give me the order ID?"}),
    (22, 201, 3, C2, CALL812),
    (23, 201, 5, C3, {"type": "reply", "content": "I couldn't find your order."}),
    (24, 202, 1, C4, CALL900),
]
# Gold states by hand: t21 pursues get_order_details, nothing given yet; t22 the user gave 812;
# t23 no API is left to call; t24 the first message gives both 900 and "damaged".
# Every API is confirmed except at t23 (none left to call).
GOLD = {21: {"api_confirmed": True, "api": "get_order_details", "slots": {}, "slot_sources": {}},
        22: {"api_confirmed": True, "api": "get_order_details", "slots": {"order_id": 812},
             "slot_sources": {"order_id": "user"}},
        23: {"api_confirmed": False, "api": None, "slots": {}, "slot_sources": {}},
        24: {"api_confirmed": True, "api": "refund_order", "slots": {"order_id": 900, "reason": "damaged"},
             "slot_sources": {"order_id": "user", "reason": "user"}}}


def dst_release() -> Release:
    release = Release.objects.create(name="dst", version=1, kind="curated", content_hash="1" * 64, manifest={})
    for tid, conv, pos, context, expected in DST_TESTS:
        ReleaseTest.objects.create(release=release, test_id=tid, conversation_id=conv, position=pos, data={
            "test_id": tid, "conversation_id": conv, "position": pos, "procedure": PROCEDURE, "apis": APIS,
            "context": context, "expected": expected, "noise_kinds": ["typo"] if conv == 202 else []})
    return release


def test_gold_states_by_hand():
    states = D.gold_states([{"position": p, "context": c, "expected": e} for _t, _c, p, c, e in DST_TESTS[:3]])
    assert states == [GOLD[21], GOLD[22], GOLD[23]]
    assert D.gold_states([{"position": 1, "context": C4, "expected": CALL900}]) == [GOLD[24]]


def which(body) -> int:
    convo = body["messages"][-1]["content"]
    return 23 if "api_output" in convo else 22 if "#812" in convo else 24 if "900" in convo else 21


ACTIONS_SAID = {  # the agent's next step          expected action -> predicted action
    21: json.dumps({"type": "reply", "parameters": {"content": "Could you give me your order ID?"}}),  # request ok
    22: json.dumps({"type": "get_order_details", "parameters": {"order_id": 812}}),  # call ok
    23: json.dumps({"type": "reply", "parameters": {"content": "It shipped. Anything else?"}}),  # response -> bye
    24: json.dumps({"type": "reply", "parameters": {"content": "What is the reason?"}}),  # call -> request
}
STATES_SAID = {
    21: {"api": "get_order_details", "slots": {}},  # joint ok, no slot
    22: {"api": "get_order_details", "slots": {"order_id": "812"}},  # joint ok ("812" = 812), 1 tp
    23: {"api": "get_order_details", "slots": {"order_id": 812}},  # wrong API; 1 false positive
    24: {"api": "refund_order", "slots": {"order_id": 900}},  # reason missing: 1 tp, 1 false negative
}


def agent_script(body, n):
    t = which(body)
    if "report the dialogue state" in body["messages"][0]["content"]:
        return Reply(content=json.dumps(STATES_SAID[t]))
    return Reply(content=ACTIONS_SAID[t])


@pytest.mark.django_db
def test_action_prediction_and_dst_on_a_hand_made_run(fake_openai, openai_settings, client, researcher):
    fake_openai.set_handler(agent_script)
    agent = services.agent_create(name="dst", mode=AgentMode.PROMPT, model="fake-model")
    run = services.run_execute_inline(run=services.run_create(
        agent=agent, release=dst_release(), similarity="lexical", dst=True, start=False), workers=1)
    report = run.metrics
    actions = report["actions"]
    assert (actions["correct"], actions["total"]) == (2, 4)
    assert actions["matrix"] == {"request": {"request": 1}, "call": {"call": 1, "request": 1},
                                 "response": {"system_bye": 1}}
    dst = report["dst"]
    # joint: t21, t22 -> 2/4; slots: tp 2 (t22 order_id, t24 order_id), predicted 3, gold 3.
    assert (dst["joint"], dst["total"]) == (2, 4)
    assert dst["slot_precision"] == pytest.approx(2 / 3) and dst["slot_recall"] == pytest.approx(2 / 3)
    assert dst["slot_f1"] == pytest.approx(2 / 3)
    # stages: conversation 201 has three tests (early, middle, late), 202 one (early).
    assert {k: (v["joint"], v["total"]) for k, v in dst["by_stage"].items()} == {
        "early": (1, 2), "middle": (1, 1), "late": (0, 1)}
    assert {k: (v["joint"], v["total"]) for k, v in dst["by_noise"].items()} == {"no noise": (2, 3), "typo": (0, 1)}
    client.force_login(researcher)
    page = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert "Action prediction" in page and "Joint goal accuracy" in page


# --------------------------------------------------------------------------- pass^k


def test_pass_k_formulas_by_hand():
    assert T.pass_hat_k(2, 3, 2) == pytest.approx(1 / 3) and T.pass_at_k(1, 3, 2) == pytest.approx(2 / 3)
    assert T.pass_hat_k(3, 3, 3) == 1 and T.pass_at_k(0, 3, 1) == 0
    with pytest.raises(ValueError):
        T.pass_hat_k(1, 3, 4)


# Three tests, three trials each. What the agent answers at its n-th attempt at each test:
TRIAL_TESTS = [t for t in TESTS if t[0] in (1, 2, 10)]  # t1, t2 in conversation 101; t10 in 104
RIGHT = {1: {"type": "reply", "parameters": {"content": "Can you give me your order ID?"}},
         2: {"type": "get_order_details", "parameters": {"order_id": 812}},
         10: {"type": "reply", "parameters": {"content": "Goodbye!"}}}
WRONG = {1: {"type": "reply", "parameters": {"content": "The weather is nice."}},  # reply, wrong text
         2: {"type": "reply", "parameters": {"content": "Which order?"}}}  # no API call
PLAN = {1: [RIGHT[1], RIGHT[1], WRONG[1]], 2: [RIGHT[2], WRONG[2], WRONG[2]], 10: [RIGHT[10]] * 3}


@pytest.mark.django_db
def test_pass_hat_k_on_a_scripted_agent_whose_answers_vary(fake_openai, openai_settings, monkeypatch, client,
                                                           researcher):
    asked = Counter()

    def handler(body, n):
        t = which_test(body)
        answer = PLAN[t][asked[t]]
        asked[t] += 1
        return Reply(content=json.dumps(answer))

    fake_openai.set_handler(handler)
    # Claim tests in creation order (trial 0 of every test, then trial 1, ...), so that the n-th
    # attempt at a test is its trial n and conversations line up across trials.
    monkeypatch.setattr(lifecycle.random, "choice", lambda seq: seq[0])
    agent = services.agent_create(name="varied", mode=AgentMode.PROMPT, model="fake-model", temperature=0.7)
    run = services.run_execute_inline(run=services.run_create(
        agent=agent, release=make_release(tests=TRIAL_TESTS), similarity="lexical", trials=3, start=False),
        workers=1)
    assert run.total == 9 and run.done == 9
    trials = run.metrics["trials"]["metrics"]

    def values(metric, field):
        return [Fraction(r[field]).limit_denominator(100) for r in trials[metric]["rows"]]

    # test correctness successes: t1 2/3, t2 1/3, t10 3/3.
    #   pass^1 = (2/3 + 1/3 + 1)/3 = 2/3; pass^2 = (1/3 + 0 + 1)/3 = 4/9; pass^3 = (0 + 0 + 1)/3 = 1/3
    #   pass@1 = 2/3; pass@2 = (1 + 2/3 + 1)/3 = 8/9; pass@3 = 1
    assert values("test_correct", "pass_hat_k") == [Fraction(2, 3), Fraction(4, 9), Fraction(1, 3)]
    assert values("test_correct", "pass_at_k") == [Fraction(2, 3), Fraction(8, 9), Fraction(1)]
    # reply recall over t1, t10: always a reply -> 1 for every k; API recall over t2: 1/3, 0, 0.
    assert values("reply_recall", "pass_hat_k") == [1, 1, 1]
    assert values("api_recall", "pass_hat_k") == [Fraction(1, 3), 0, 0]
    # conversations: 101 right only in trial 0 (1/3), 104 always (3/3).
    #   pass^1 = (1/3 + 1)/2 = 2/3; pass^2 = (0 + 1)/2 = 1/2; pass^3 = 1/2; pass@2 = (2/3 + 1)/2 = 5/6
    assert values("conversation_correct", "pass_hat_k") == [Fraction(2, 3), Fraction(1, 2), Fraction(1, 2)]
    assert values("conversation_correct", "pass_at_k") == [Fraction(2, 3), Fraction(5, 6), Fraction(1)]
    lo, hi = trials["test_correct"]["rows"][0]["pass_hat_k_ci"]
    assert lo <= 2 / 3 <= hi
    # The seven metrics stay over the first trial: all three right.
    assert run.metrics["metrics"]["test_correct"]["numerator"] == 3
    assert {v["test"] for v in run.metrics["trials"]["varied_tests"]} == {
        e.pk for e in run.release.entries.filter(test_id__in=[1, 2])}
    client.force_login(researcher)
    page = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert "pass^3" in page and "pass@2" in page
    compare = client.get(reverse("evaluation:compare") + f"?runs={run.pk}").content.decode()
    assert "pass^3" in compare


@pytest.mark.django_db
def test_trials_need_temperature(small_release):
    agent = services.agent_create(name="cold", mode=AgentMode.PROMPT, model="m", temperature=0.0)
    with pytest.raises(services.EvaluationError, match="temperature > 0"):
        services.run_create(agent=agent, release=small_release, similarity="lexical", trials=3, start=False)


@pytest.mark.django_db
def test_evaluate_command_prints_actions_and_trials(small_release, capsys):
    call_command("evaluate", "--release", str(small_release.pk), "--agent", "gold", "--inline", "--dst", "--concurrency", "1",
                 "--similarity", "lexical")
    out = capsys.readouterr().out
    assert "API comparison: API and parameter names exactly" in out
    assert "action prediction accuracy: 100.0% (10/10)" in out and "joint goal accuracy 100.0% (10/10)" in out

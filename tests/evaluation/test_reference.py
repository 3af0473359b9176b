"""The product's metrics agree exactly with an independent plain implementation of §4.3
(tests/evaluation/reference_metrics.py) on random releases and random answers: the pure judge and
aggregation, the standalone runner's records, and whole runs of an HTTP agent stored in the
database (run on SQLite and on PostgreSQL)."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curation.models import Release, ReleaseTest
from evaluation import agent_kinds, services
from evaluation import metrics as M
from evaluation import reader as R
from evaluation.runner import core
from tests.evaluation import reference_metrics as REF
from tests.evaluation.conftest import APIS, PROCEDURE
from tests.evaluation.http_agents import AgentServer

NAMES = [a["name"] for a in APIS]
WORDS = ["order", "your", "please", "id", "refund", "the", "is", "late", "could", "you", "give", "me", "812"]
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
scalars = st.one_of(st.integers(0, 3), st.sampled_from([812, 812.0, "812", True, False, None, "null", "lost", "Lost"]))
values = st.one_of(scalars, st.lists(scalars, max_size=2))
params = st.dictionaries(st.sampled_from(["order_id", "reason", "note"]), values, max_size=3)


@st.composite
def release(draw):
    """Conversations of 1–4 tests; expected replies and calls."""
    tests, test_id = [], 0
    for conv in range(1, draw(st.integers(1, 6)) + 1):
        for pos in range(draw(st.integers(1, 4))):
            test_id += 1
            expected = draw(st.one_of(
                st.builds(lambda t: {"type": "reply", "content": t}, texts),
                st.builds(lambda n, p: {"type": "api_call", "name": n, "parameters": p}, st.sampled_from(NAMES), params)))
            tests.append({"test_id": test_id, "conversation_id": 100 + conv, "position": 2 * pos + 1,
                          "expected": expected})
    return tests


def mutated(draw, expected_params: dict) -> dict:
    """The expected parameters, often as they are, else with one typed change, an extra or a
    missing parameter."""
    p = dict(expected_params)
    how = draw(st.sampled_from(["same", "same", "value", "extra", "missing"]))
    if how == "value" and p:
        key = draw(st.sampled_from(sorted(p)))
        p[key] = draw(scalars)
    elif how == "extra":
        p[draw(st.sampled_from(["note", "extra"]))] = draw(scalars)
    elif how == "missing" and p:
        p.pop(draw(st.sampled_from(sorted(p))))
    return p


@st.composite
def answers(draw, tests, outages: bool = True):
    """An answer per test: right, nearly right, wrong API, wrong kind, unreadable, or none."""
    out = {}
    for t in tests:
        e = t["expected"]
        choices = ["reply", "call", "invalid"] + (["none"] if outages else [])
        what = draw(st.sampled_from(choices + (["right"] * 2)))
        if what == "right":
            what = "reply" if e["type"] == "reply" else "call"
        if what == "none":
            out[t["test_id"]] = None
        elif what == "invalid":
            out[t["test_id"]] = {"type": "invalid"}
        elif what == "reply":
            text = e["content"] if e["type"] == "reply" and draw(st.booleans()) else draw(texts)
            out[t["test_id"]] = {"type": "reply", "content": text}
        else:
            name = e["name"] if e["type"] == "api_call" and draw(st.booleans()) else draw(
                st.sampled_from(NAMES + ["Get_Order_Details", "greet"]))
            base = e.get("parameters", {}) if e["type"] == "api_call" else draw(params)
            out[t["test_id"]] = {"type": "api_call", "name": name, "parameters": mutated(draw, base)}
    return out


def counts(metrics: dict) -> dict:
    return {k: (m.numerator, m.denominator) if isinstance(m, M.Metric) else (m["numerator"], m["denominator"])
            for k, m in metrics.items()}


@st.composite
def release_and_answers(draw, outages: bool = True):
    tests = draw(release())
    return tests, draw(answers(tests, outages))


@settings(max_examples=400, deadline=None)
@given(release_and_answers())
def test_the_product_judge_and_metrics_agree_with_the_reference(case):
    tests, given_answers = case
    outcomes = []
    for t in tests:
        a, e = given_answers[t["test_id"]], t["expected"]
        if a is None:
            outcomes.append(M.unanswered(e, conversation_id=t["conversation_id"]))
            continue
        sim = core.lexical_f1(a["content"], e["content"]) if a["type"] == e["type"] == "reply" else None
        outcomes.append(M.judge(e, {**a, "reason": "unreadable"} if a["type"] == "invalid" else a, similarity=sim,
                                conversation_id=t["conversation_id"]))
    assert counts(M.compute_metrics(outcomes)) == REF.score(tests, given_answers)


@settings(max_examples=200, deadline=None)
@given(release_and_answers())
def test_the_runner_records_agree_with_the_reference(case):
    tests, given_answers = case
    records = []
    for t in tests:
        a = given_answers[t["test_id"]]
        action = R.outage("down") if a is None else (R.invalid("garbage") if a["type"] == "invalid" else a)
        records.append(core.record_for(t, action, threshold=0.55))
    assert counts(core.report(records, bootstrap=0)["metrics"]) == REF.score(tests, given_answers)


def test_the_reference_itself_on_a_case_worked_by_hand():
    """Two conversations: 1 = (reply ok, call with "812" for 812), 2 = (call ok)."""
    tests = [{"test_id": 1, "conversation_id": 1, "expected": {"type": "reply", "content": "your order id please"}},
             {"test_id": 2, "conversation_id": 1, "expected": {"type": "api_call", "name": "f", "parameters": {"id": 812}}},
             {"test_id": 3, "conversation_id": 2, "expected": {"type": "api_call", "name": "g", "parameters": {}}}]
    got = {1: {"type": "reply", "content": "your order id please"},
           2: {"type": "api_call", "name": "f", "parameters": {"id": "812"}},
           3: {"type": "api_call", "name": "g", "parameters": {}}}
    assert REF.score(tests, got) == {"reply_recall": (1, 1), "reply_correct": (1, 1), "api_recall": (2, 2),
                                     "api_correct": (2, 2), "params_correct": (1, 2), "test_correct": (2, 3),
                                     "conversation_correct": (1, 2)}


# --------------------------------------------------------------------------- whole runs in the database


def http_body(action: dict) -> bytes:
    if action["type"] == "invalid":
        return b"this is not JSON"
    if action["type"] == "reply":
        return json.dumps({"role": "assistant", "content": action["content"]}).encode()
    return json.dumps({"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {
        "name": action["name"], "arguments": json.dumps(action["parameters"])}}]}).encode()


@pytest.mark.django_db
def test_runs_of_an_http_agent_agree_with_the_reference(db):
    """Random releases frozen in the database, an HTTP agent answering random actions: the run's
    stored metrics equal the reference's (without outages: they stop a run, tested elsewhere)."""
    current: dict[int, dict] = {}
    made = {"n": 0}
    with AgentServer(lambda body: (200, http_body(current[int(body["ids"]["test"])]), 0.0)) as server:
        agent = agent_kinds.agent_create_http(name="random", url=server.url, retries=0)

        @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
        @given(release_and_answers(outages=False))
        def check(case):
            tests, given_answers = case
            made["n"] += 1
            rel = Release.objects.create(name=f"random-{made['n']}", version=1, kind="curated",
                                         content_hash=f"{made['n']:064d}", manifest={})
            for t in tests:
                ReleaseTest.objects.create(release=rel, test_id=t["test_id"], conversation_id=t["conversation_id"],
                                           position=t["position"], data={
                                               **t, "procedure": PROCEDURE, "apis": APIS, "noise_kinds": [],
                                               "context": [{"role": "user", "content": f"help [t{t['test_id']}]"}]})
            current.clear()
            current.update(given_answers)
            run = services.run_execute_inline(run=services.run_create(
                agent=agent, release=rel, similarity="lexical", start=False, max_error_share=1.0), workers=1)
            assert counts(run.metrics["metrics"]) == REF.score(tests, given_answers), run.error

        check()

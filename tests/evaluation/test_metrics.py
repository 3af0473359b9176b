"""Pure metric code: normalisation, judging, aggregation, intervals, correlations (no database)."""
from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluation import metrics as M
from evaluation import similarity as S


@pytest.mark.parametrize("a,b", [
    (812, "812"), ("812", " 812 "), (812.0, 812), ("John  Smith", "john smith"), (True, "true"),
    (None, "null"), ("1,250.50", 1250.5), ([1, "2"], ["1", 2]), ({"A b": "X"}, {"a_b": "x"}),
])
def test_normalise_value_equates_types_case_and_whitespace(a, b):
    assert M.normalise_value(a) == M.normalise_value(b)


@pytest.mark.parametrize("a,b", [(812, 813), ("0812", 812), ("refund", "refunded"), ([1, 2], [2, 1])])
def test_normalise_value_keeps_real_differences(a, b):
    assert M.normalise_value(a) != M.normalise_value(b)


def test_params_match_lenient_is_a_named_option():
    assert M.params_match({"order_id": 812, "reason": "Damaged"}, {"Order_ID": "812", "reason": " damaged"},
                          M.LENIENT)
    assert not M.params_match({"order_id": 812, "reason": "Damaged"}, {"Order_ID": "812", "reason": " damaged"})


def test_params_match():
    assert M.params_match({"order_id": 812, "reason": "Damaged"}, {"order_id": 812.0, "reason": "Damaged"})
    assert not M.params_match({"order_id": 812, "reason": "Damaged"}, {"order_id": "812", "reason": "Damaged"})
    assert not M.params_match({"order_id": 812}, {"order_id": 812, "note": None})  # exact: null is not absent
    assert M.params_match({"order_id": 812}, {"order_id": 812, "note": None}, M.LENIENT)  # lenient: it is
    assert not M.params_match({"order_id": 812}, {"order_id": 812, "note": "x"})
    assert not M.params_match({"order_id": 812, "email": "a@b.c"}, {"order_id": 812})
    assert M.params_match({}, {})


def test_judge_every_branch():
    reply = {"type": "reply", "content": "hi"}
    call = {"type": "api_call", "name": "get_order", "parameters": {"id": 1}}
    o = M.judge(reply, {"type": "reply", "content": "hi"}, similarity=0.9, threshold=0.55)
    assert (o.reply_recalled, o.reply_correct, o.correct) == (True, True, True)
    o = M.judge(reply, {"type": "reply", "content": "x"}, similarity=0.54, threshold=0.55)
    assert (o.reply_recalled, o.reply_correct, o.correct) == (True, False, False)
    o = M.judge(reply, call)
    assert (o.reply_recalled, o.correct, o.api_recalled) == (False, False, False)
    o = M.judge(call, {"type": "api_call", "name": "get_order", "parameters": {"id": 1.0}})
    assert (o.api_recalled, o.api_correct, o.params_correct, o.correct) == (True, True, True, True)
    o = M.judge(call, {"type": "api_call", "name": "get_order", "parameters": {"id": "1"}})
    assert (o.api_recalled, o.api_correct, o.params_correct, o.correct) == (True, True, False, False)
    assert o.reason == 'parameters of get_order: id: expected 1 (number), got "1" (string)'
    o = M.judge(call, {"type": "api_call", "name": "Get_Order", "parameters": {"id": "1"}}, comparison=M.LENIENT)
    assert (o.api_recalled, o.api_correct, o.params_correct, o.correct) == (True, True, True, True)
    o = M.judge(call, {"type": "api_call", "name": "get_order", "parameters": {"id": 2}})
    assert (o.api_correct, o.params_correct, o.correct) == (True, False, False)
    o = M.judge(call, {"type": "api_call", "name": "cancel", "parameters": {"id": 1}})
    assert (o.api_recalled, o.api_correct, o.params_correct) == (True, False, False)
    o = M.judge(call, {"type": "invalid", "reason": "garbage"})
    assert (o.predicted_type, o.api_recalled, o.correct, o.reason) == ("invalid", False, False, "garbage")
    with pytest.raises(ValueError):
        M.judge(reply, {"type": "reply", "content": "x"})  # similarity missing


def test_compute_metrics_numerators_denominators_and_conversations():
    R, A = "reply", "api_call"
    outcomes = [
        M.Outcome(1, R, R, reply_recalled=True, reply_correct=True, correct=True),
        M.Outcome(1, A, A, api_recalled=True, api_correct=True, params_correct=True, correct=True),
        M.Outcome(2, A, A, api_recalled=True, api_correct=True),
        M.Outcome(2, R, "invalid"),
    ]
    m = M.compute_metrics(outcomes)
    got = {k: (v.numerator, v.denominator) for k, v in m.items()}
    assert got == {"reply_recall": (1, 2), "reply_correct": (1, 1), "api_recall": (2, 2), "api_correct": (2, 2),
                   "params_correct": (1, 2), "test_correct": (2, 4), "conversation_correct": (1, 2)}
    assert m["test_correct"].value == 0.5 and m["test_correct"].percent == 50.0
    empty = M.compute_metrics([])
    assert all(v.denominator == 0 and v.value is None for v in empty.values())


def test_bootstrap_interval_contains_the_estimate_and_is_deterministic():
    outcomes = [M.Outcome(i // 3, "reply", "reply", reply_recalled=True, reply_correct=i % 2 == 0,
                          correct=i % 2 == 0) for i in range(60)]
    a = M.compute_metrics(outcomes, bootstrap=300, seed=7)
    b = M.compute_metrics(outcomes, bootstrap=300, seed=7)
    t = a["test_correct"]
    assert t.ci_low < t.value < t.ci_high and (t.ci_low, t.ci_high) == (b["test_correct"].ci_low, b["test_correct"].ci_high)
    assert a["api_recall"].ci_low is None  # no API test at all: no interval


def test_stages_and_breakdown():
    stages = M.stages_by_position([("a", 1, 1), ("b", 1, 3), ("c", 1, 5), ("d", 2, 1)])
    assert stages == {"a": "early", "b": "middle", "c": "late", "d": "early"}
    outs = [M.Outcome(1, "reply", "reply", reply_recalled=True, reply_correct=True, correct=True,
                      groups={"noise": ["attack", "out_of_procedure"]}),
            M.Outcome(2, "reply", "reply", reply_recalled=True, groups={"noise": ["attack"]})]
    b = M.breakdown(outs, "noise")
    assert b["attack"]["test_correct"].denominator == 2 and b["out_of_procedure"]["test_correct"].numerator == 1


def test_correlations():
    # the paper's Figure 5 points (Table 2 vs Supplementary Table 1, test correctness)
    x = [88.9, 84.7, 83.3, 76.9, 73.1, 88.0]
    y = [85.4, 81.3, 78.9, 75.5, 73.4, 82.9]
    assert M.pearson(x, y) == pytest.approx(0.98, abs=0.01)
    assert M.spearman(x, y) == pytest.approx(1.0)
    assert M.spearman([1, 2, 2, 3], [1, 3, 3, 4]) == pytest.approx(1.0)
    assert M.pearson([1, 1], [2, 3]) is None and M.pearson([1], [1]) is None


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=20))
def test_correlation_is_bounded(xs):
    ys = [v * 2 + 1 for v in xs]
    r = M.pearson(xs, ys)
    assert r is None or -1.0000001 <= r <= 1.0000001
    s = M.spearman(xs, list(reversed(ys)))
    assert s is None or -1.0000001 <= s <= 1.0000001


@given(st.text(max_size=60), st.text(max_size=60))
def test_lexical_f1_is_a_symmetric_score(a, b):
    v = S.lexical_f1(a, b)
    assert 0.0 <= v <= 1.0 and math.isclose(v, S.lexical_f1(b, a))
    assert S.lexical_f1(a, a) == 1.0


def _outcomes(correct_by_conv: dict[int, list[bool]]) -> list[M.Outcome]:
    """API-call tests: correct ones call the right API with the right parameters."""
    return [M.Outcome(conversation_id=c, expected_type="api_call", predicted_type="api_call", api_recalled=True,
                      api_correct=ok, params_correct=ok, correct=ok)
            for c, oks in correct_by_conv.items() for ok in oks]


def test_paired_differences_by_hand():
    a = _outcomes({1: [True, True], 2: [True, False], 3: [True, True], 4: [False, False]})
    b = _outcomes({1: [True, False], 2: [False, False], 3: [True, True], 4: [False, False], 5: [True]})
    d = M.paired_differences(a, b, bootstrap=500, seed=1)
    # conversation 5 is only in B: dropped. Tests: A 5/8, B 3/8 -> +0.25; conversations: A 2/4, B 1/4.
    assert d["test_correct"].conversations == 4
    assert d["test_correct"].diff == pytest.approx(0.25) and d["conversation_correct"].diff == pytest.approx(0.25)
    assert d["reply_recall"].diff is None and d["reply_recall"].ci_low is None  # no reply expected anywhere
    # A is never worse than B on any conversation, so no resample can put A below B.
    assert 0 <= d["test_correct"].ci_low <= 0.25 <= d["test_correct"].ci_high
    assert d["api_recall"].diff == 0 and (d["api_recall"].ci_low, d["api_recall"].ci_high) == (0, 0)
    assert not d["api_recall"].significant


def test_paired_differences_extremes_and_symmetry():
    right = _outcomes({c: [True, True] for c in range(6)})
    wrong = _outcomes({c: [False, True] for c in range(6)})
    d = M.paired_differences(right, wrong, bootstrap=200)
    assert d["test_correct"].diff == 0.5 and (d["test_correct"].ci_low, d["test_correct"].ci_high) == (0.5, 0.5)
    assert d["test_correct"].significant and d["conversation_correct"].diff == 1.0
    back = M.paired_differences(wrong, right, bootstrap=200)
    assert back["test_correct"].diff == -0.5 and back["test_correct"].significant
    same = M.paired_differences(right, right, bootstrap=200)
    assert all(x.diff == 0 and not x.significant for x in same.values() if x.diff is not None)
    assert M.paired_differences([], right)["test_correct"].conversations == 0

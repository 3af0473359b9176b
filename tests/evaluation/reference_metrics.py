"""A second, deliberately plain implementation of ALMITA §4.3, written from the paper's text.

It shares no code with evaluation/ (it imports nothing from it) and is written for reading, not
speed: one loop per metric, each with the paper's sentence above it. Tests score random releases
and random answers with both and require the same numerators and denominators.

Input: the tests of a release, each ``{"test_id", "conversation_id", "expected"}`` where expected
is ``{"type": "reply", "content"}`` or ``{"type": "api_call", "name", "parameters"}``, and the
agent's answer per test id: the same kinds of dict, ``{"type": "invalid"}`` for an answer that
could not be read, or None for a test that got no answer at all. Both of the last two are wrong
wherever they are counted. Replies are compared by token-overlap F1 (the product's offline
similarity; the paper uses BERTScore) against the threshold; calls by name and by parameters,
equal by JSON type and value (docs/metrics.md, "exact").
"""
from __future__ import annotations


def words(text):
    return str(text).lower().split()


def token_f1(candidate, reference):
    """F1 of the shared words, each word counted as often as both texts hold it."""
    a, b = words(candidate), words(reference)
    if not a and not b:
        return 1.0
    remaining = list(b)
    shared = 0
    for w in a:
        if w in remaining:
            remaining.remove(w)
            shared += 1
    if shared == 0:
        return 0.0
    return 2.0 * shared / (len(a) + len(b))


def same_json(x, y):
    """Equal JSON values: numbers by value, never a number and a boolean, a string and a number,
    or null and anything else; arrays in order; objects with the same keys."""
    if x is None or y is None:
        return x is None and y is None
    if isinstance(x, bool) or isinstance(y, bool):
        return isinstance(x, bool) and isinstance(y, bool) and x == y
    if isinstance(x, (int, float)) or isinstance(y, (int, float)):
        return isinstance(x, (int, float)) and isinstance(y, (int, float)) and x == y
    if isinstance(x, str) or isinstance(y, str):
        return isinstance(x, str) and isinstance(y, str) and x == y
    if isinstance(x, list) or isinstance(y, list):
        if not (isinstance(x, list) and isinstance(y, list)) or len(x) != len(y):
            return False
        return all(same_json(x[i], y[i]) for i in range(len(x)))
    if set(x) != set(y):
        return False
    return all(same_json(x[k], y[k]) for k in x)


def kind(action):
    if action is None:
        return "no answer"
    return action.get("type")


def score(tests, answers, threshold=0.55):
    """{metric: (numerator, denominator)} for the seven dimensions of Table 2."""
    out = {}

    # (i) reply recall: "when the correct action is to reply, the agent correctly sends a reply
    # message instead of calling an unnecessary API"
    den = num = 0
    for t in tests:
        if t["expected"]["type"] == "reply":
            den += 1
            if kind(answers.get(t["test_id"])) == "reply":
                num += 1
    out["reply_recall"] = (num, den)

    # (ii) correct reply: "when both the correct and the predicted action is to reply, the agent's
    # reply matches the expected reply (... a similarity threshold of 0.55 ...)"
    den = num = 0
    for t in tests:
        answer = answers.get(t["test_id"])
        if t["expected"]["type"] == "reply" and kind(answer) == "reply":
            den += 1
            if token_f1(answer["content"], t["expected"]["content"]) >= threshold:
                num += 1
    out["reply_correct"] = (num, den)

    # (iii) API recall: "when the correct action is to do an API call, the agent correctly detects
    # that it needed to perform an API call instead of replying"
    den = num = 0
    for t in tests:
        if t["expected"]["type"] == "api_call":
            den += 1
            if kind(answers.get(t["test_id"])) == "api_call":
                num += 1
    out["api_recall"] = (num, den)

    # (iv) correct API: "when both the correct and the predicted action is to perform an API call,
    # the agent calls the correct API"
    den = num = 0
    for t in tests:
        answer = answers.get(t["test_id"])
        if t["expected"]["type"] == "api_call" and kind(answer) == "api_call":
            den += 1
            if answer["name"] == t["expected"]["name"]:
                num += 1
    out["api_correct"] = (num, den)

    # (v) correct API parameters: "when both the correct and the predicted action are the same API
    # call, the agents calls the API with the correct parameter values"
    den = num = 0
    for t in tests:
        answer = answers.get(t["test_id"])
        if (t["expected"]["type"] == "api_call" and kind(answer) == "api_call"
                and answer["name"] == t["expected"]["name"]):
            den += 1
            if same_json(answer.get("parameters") or {}, t["expected"].get("parameters") or {}):
                num += 1
    out["params_correct"] = (num, den)

    # (vi) test correctness: "whether the test is fully correct (i.e., call the correct reply/API
    # and, if the correct action is an API, call the correct API and use the correct parameters, or
    # if the correct action is a reply, provide a correct reply)"
    right = {}
    for t in tests:
        answer = answers.get(t["test_id"])
        e = t["expected"]
        if e["type"] == "reply":
            ok = kind(answer) == "reply" and token_f1(answer["content"], e["content"]) >= threshold
        else:
            ok = (kind(answer) == "api_call" and answer["name"] == e["name"]
                  and same_json(answer.get("parameters") or {}, e.get("parameters") or {}))
        right[t["test_id"]] = ok
    out["test_correct"] = (sum(1 for t in tests if right[t["test_id"]]), len(tests))

    # (vii) conversation correctness: "whether the sequence of all tests from the conversation where
    # all correct"
    conversations = {}
    for t in tests:
        conversations.setdefault(t["conversation_id"], []).append(right[t["test_id"]])
    out["conversation_correct"] = (sum(1 for results in conversations.values() if all(results)),
                                   len(conversations))
    return out

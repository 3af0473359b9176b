"""Action prediction (ToolDial §4): the agent's next action against the expected one, with a
confusion matrix. Pure (no Django); the labels come from generation.pipeline.dialogue_actions.

The expected action of a test is the action of its expected step. The predicted action comes
from one of two sources, chosen per run and recorded on it (``action_labels``):

* ``rules``: the action of the agent's answer, labelled by the same lexical rules after the same
  context;
* ``model``: ToolDial's setting — the agent's model is asked, after the same context, which action
  the system should take next (:data:`ACTION_INSTRUCTION`) and answers a label
  (:func:`parse_action_label`; anything else is ``invalid``).

Accuracy is over all tests (an unanswered test's predicted action is ``failed``: wrong).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from generation.pipeline.dialogue_actions import ACTIONS, SYSTEM_ACTIONS, answer_action, label_turns  # noqa: F401

FAILED = "failed"
INVALID = "invalid"
RULES, MODEL = "rules", "model"
ACTION_LABELS = {RULES: "lexical rules on the agent's answer",
                 MODEL: "asked of the agent's model (ToolDial's action prediction)"}
ACTION_DESCRIPTIONS = {  # ToolDial Table 7, in our words; no retriever: ALMITA agents are given their APIs
    "request": "ask the customer for information the next step needs",
    "response": "answer the customer from the result of an API call",
    "clarify": "the request is vague: ask the customer what they mean",
    "suggest": "propose something and ask whether the customer agrees",
    "response_fail": "tell the customer the request cannot be done",
    "system_bye": "say goodbye politely",
    "call": "call an API with the information collected, without replying yet",
}
ACTION_INSTRUCTION = ("Do not act now. Instead, say which action the agent should take next, after the last "
                      "message above. The actions:\n" + "\n".join(f"- {a}: {d}" for a, d in ACTION_DESCRIPTIONS.items())
                      + "\nAnswer with the action's name only, e.g. request.")
ACTION_MARKER = "say which action the agent should take next"  # how a fake server tells these requests apart


def _norm(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.lower())


def parse_action_label(text: str | None) -> str:
    """The action named by the model's answer (ToolDial: lower-cased, special characters removed,
    then an exact match), also inside a JSON object {"action": ...}; ``invalid`` otherwise."""
    said = (text or "").strip()
    m = re.search(r'"action"\s*:\s*"([^"]*)"', said)
    if m:
        said = m.group(1)
    said = said.strip().strip(".").strip()
    by_norm = {_norm(a): a for a in SYSTEM_ACTIONS}
    if _norm(said) in by_norm:
        return by_norm[_norm(said)]
    first = re.split(r"[\n:(]", said, maxsplit=1)[0]  # "Request: ask for the order id"
    return by_norm.get(_norm(first), INVALID)


def expected_action_of(data: dict[str, Any]) -> str:
    """A release row's expected action: the stored label when it has one, else computed."""
    stored = data.get("expected_action")
    if isinstance(stored, str) and stored:
        return stored
    return answer_action(data.get("context") or [], data.get("expected") or {})


def action_report(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """[(expected, predicted)] -> accuracy (correct, total), a confusion matrix
    {expected: {predicted: count}}, and per-action precision / recall / F1."""
    pairs = list(pairs)
    correct = sum(1 for e, p in pairs if e == p)
    matrix: dict[str, Counter] = {}
    for e, p in pairs:
        matrix.setdefault(e, Counter())[p] += 1
    labels = sorted({e for e, _ in pairs} | {p for _, p in pairs},
                    key=lambda a: (ACTIONS.index(a) if a in ACTIONS else len(ACTIONS), a))
    per_action = {}
    for a in labels:
        tp = sum(1 for e, p in pairs if e == a and p == a)
        fp = sum(1 for e, p in pairs if e != a and p == a)
        fn = sum(1 for e, p in pairs if e == a and p != a)
        prec = tp / (tp + fp) if tp + fp else None
        rec = tp / (tp + fn) if tp + fn else None
        f1 = 2 * prec * rec / (prec + rec) if prec and rec else (0.0 if prec is not None and rec is not None else None)
        per_action[a] = {"support": tp + fn, "precision": prec, "recall": rec, "f1": f1}
    return {"correct": correct, "total": len(pairs), "accuracy": correct / len(pairs) if pairs else None,
            "labels": labels, "matrix": {e: dict(c) for e, c in matrix.items()}, "per_action": per_action}

"""Action prediction (ToolDial §4): the agent's next action against the expected one, with a
confusion matrix. Pure (no Django); the labels come from generation.pipeline.dialogue_actions.

The expected action of a test is the action of its expected step; the predicted action is the
action of the agent's answer, labelled by the same rules after the same context. Accuracy is over
all tests (an unanswered test's predicted action is ``failed``: wrong).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from generation.pipeline.dialogue_actions import ACTIONS, SYSTEM_ACTIONS, answer_action, label_turns  # noqa: F401

FAILED = "failed"


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

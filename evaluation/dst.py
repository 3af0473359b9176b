"""Dialogue-state tracking (ToolDial §4) on ALMITA tests. Pure (no Django).

Gold state at a test = the API being pursued (the first API call expected at or after this test
in its conversation; none when the conversation calls no more API) and the slot values the user
has given so far: the parameters of that call whose value appears in a user message of the
test's context. Values that came from an earlier API output, not from the user, are not slots
the user gave.

The agent, in the DST mode of a run, is asked for ``{"api": <name or null>, "slots": {...}}``.
Scores (ToolDial normalisation: lower-case, special characters removed, on API names, slot names
and values): joint goal accuracy (the whole state exact) and slot precision / recall / F1 over
(slot, value) pairs, micro-averaged.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

API_CALL = "api_call"

DST_INSTRUCTION = """Do not act now. Instead, report the dialogue state: which action (API) the \
conversation is working towards, and the values of its parameters that the customer has given so far. \
Answer with one JSON object and nothing else:
{"api": "<name of the action, or null if none>", "slots": {<parameter name>: <value given by the customer>}}"""


def _user_text(context: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content", "")) for m in context or [] if m.get("role") == "user")


def _given(value: Any, text: str) -> bool:
    if value is None or isinstance(value, (dict, list)):
        return False
    needle = str(value).strip().lower()
    if not needle:
        return False
    if re.fullmatch(r"[\w.+-]+", needle):
        return re.search(r"(?<![\w])" + re.escape(needle) + r"(?![\w])", text.lower()) is not None
    return needle in text.lower()


def gold_states(tests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The gold state of each test of ONE conversation (`tests` with position, context, expected;
    any order); returned in the order given."""
    order = sorted(range(len(tests)), key=lambda i: tests[i].get("position", 0))
    out: list[dict[str, Any]] = [{}] * len(tests)
    for rank, i in enumerate(order):
        pursued = next((tests[j]["expected"] for j in order[rank:]
                        if (tests[j].get("expected") or {}).get("type") == API_CALL), None)
        if pursued is None:
            out[i] = {"api": None, "slots": {}}
            continue
        said = _user_text(tests[i].get("context") or [])
        slots = {str(k): v for k, v in (pursued.get("parameters") or {}).items() if _given(v, said)}
        out[i] = {"api": str(pursued.get("name")), "slots": slots}
    return out


def normalise(text: Any) -> str:
    """ToolDial's normalisation: lower-case, keep letters and digits only."""
    if text is None:
        return ""
    if isinstance(text, float) and text.is_integer():
        text = int(text)
    return re.sub(r"[^0-9a-z]", "", str(text).lower())


def _pairs(state: dict[str, Any]) -> set[tuple[str, str]]:
    slots = state.get("slots") if isinstance(state, dict) else None
    if not isinstance(slots, dict):
        return set()
    return {(normalise(k), normalise(v)) for k, v in slots.items() if normalise(v)}


def state_matches(gold: dict[str, Any], predicted: dict[str, Any] | None) -> bool:
    if not isinstance(predicted, dict):
        return False
    return normalise(gold.get("api")) == normalise(predicted.get("api")) and _pairs(gold) == _pairs(predicted)


def parse_state(content: str | None) -> dict[str, Any] | None:
    """The agent's state answer; None when it is not a JSON object with an api and slots."""
    text = (content or "").strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fence:
        text = fence.group(1).strip()
    start, end = text.find("{"), text.rfind("}")
    if not 0 <= start < end:
        return None
    try:
        obj = json.loads(text[start:end + 1])
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    api = obj.get("api", obj.get("api_name"))
    slots = obj.get("slots", obj.get("parameters", {}))
    if api is not None and not isinstance(api, str):
        return None
    if not isinstance(slots, dict):
        return None
    return {"api": api or None, "slots": slots}


def dst_scores(pairs: Iterable[tuple[dict[str, Any], dict[str, Any] | None]]) -> dict[str, Any]:
    """[(gold, predicted or None)] -> joint goal accuracy and micro slot precision/recall/F1."""
    joint = total = tp = n_pred = n_gold = 0
    for gold, predicted in pairs:
        total += 1
        joint += int(state_matches(gold, predicted))
        g, p = _pairs(gold), _pairs(predicted or {})
        tp += len(g & p)
        n_pred += len(p)
        n_gold += len(g)
    precision = tp / n_pred if n_pred else None
    recall = tp / n_gold if n_gold else None
    f1 = (2 * precision * recall / (precision + recall) if precision and recall else
          (0.0 if (n_pred or n_gold) else None))
    return {"joint": joint, "total": total, "joint_goal_accuracy": joint / total if total else None,
            "slot_precision": precision, "slot_recall": recall, "slot_f1": f1,
            "slot_true_positives": tp, "slot_predicted": n_pred, "slot_gold": n_gold}


def dst_breakdown(rows: Iterable[tuple[dict[str, Any], dict[str, Any] | None, dict[str, list[str]]]],
                  key: str) -> dict[str, dict[str, Any]]:
    """Scores per group of `key` ("stage", "noise"), like the other metrics."""
    groups: dict[str, list[tuple[dict, dict | None]]] = {}
    for gold, predicted, g in rows:
        for name in g.get(key) or []:
            groups.setdefault(name, []).append((gold, predicted))
    return {name: dst_scores(items) for name, items in sorted(groups.items())}

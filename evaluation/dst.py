"""Dialogue-state tracking (ToolDial §4) on ALMITA tests. Pure (no Django).

Gold state at a test, in ToolDial's shape (A.4: API confirmed, API status, parameters):

* ``api_confirmed``: whether the agent knows which API it is working towards. The pursued API is
  the first API call expected at or after this test in its conversation; it is confirmed unless
  there is none or the expected step is a ``clarify`` or ``suggest`` (ToolDial asks or proposes
  exactly when no API is confirmed yet; our "Shall I refund it?" waits for the customer's yes).
* ``api``: the pursued API when confirmed, else none (ToolDial: "if api_confirmed is false,
  api_status must be none").
* ``slots``: the parameters of that call whose value is already in the context, said by the user
  or **taken from an earlier API output** (ToolDial's system calls "with collected information
  from user or else"); ``slot_sources`` says which (``user`` or ``api_output``; not scored).

The agent, in the DST mode of a run, is asked for ``{"api_confirmed": true|false, "api": <name or
null>, "slots": {...}}``; ToolDial's own ``{"api_confirmed", "api_status": {"api_name",
"required_parameters", "optional_parameters"}}`` is read too, and a state without
``api_confirmed`` is confirmed when it names an API. Scores (ToolDial normalisation: lower-case,
special characters removed, on API names, slot names and values): joint goal accuracy (the whole
state exact, ``api_confirmed`` included) and slot precision / recall / F1 over (slot, value) pairs,
micro-averaged.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

API_CALL = "api_call"

DST_INSTRUCTION = """Do not act now. Instead, report the dialogue state: whether it is settled which \
action (API) the conversation is working towards, which one, and the values of its parameters that the \
conversation has given so far (said by the customer or returned by an earlier API call). \
Answer with one JSON object and nothing else:
{"api_confirmed": true or false, "api": "<name of the action, or null if not confirmed>", \
"slots": {<parameter name>: <value>}}"""
UNCONFIRMING = ("clarify", "suggest")  # ToolDial: the agent asks or proposes while no API is confirmed


def _text(context: list[dict[str, Any]], role: str) -> str:
    return "\n".join(str(m.get("content", "")) for m in context or [] if m.get("role") == role)


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
    from generation.pipeline.dialogue_actions import answer_action

    order = sorted(range(len(tests)), key=lambda i: tests[i].get("position", 0))
    out: list[dict[str, Any]] = [{}] * len(tests)
    for rank, i in enumerate(order):
        pursued = next((tests[j]["expected"] for j in order[rank:]
                        if (tests[j].get("expected") or {}).get("type") == API_CALL), None)
        context = tests[i].get("context") or []
        action = tests[i].get("expected_action") or answer_action(context, tests[i].get("expected") or {})
        if pursued is None or action in UNCONFIRMING:
            out[i] = unconfirmed()
            continue
        said, returned = _text(context, "user"), _text(context, "api_output")
        slots, sources = {}, {}
        for k, v in (pursued.get("parameters") or {}).items():
            source = "user" if _given(v, said) else "api_output" if _given(v, returned) else None
            if source:
                slots[str(k)], sources[str(k)] = v, source
        out[i] = {"api_confirmed": True, "api": str(pursued.get("name")), "slots": slots, "slot_sources": sources}
    return out


def unconfirmed() -> dict[str, Any]:
    return {"api_confirmed": False, "api": None, "slots": {}, "slot_sources": {}}


def confirmed(state: dict[str, Any]) -> bool:
    """A state's api_confirmed (true/"true"; absent: whether it names an API)."""
    flag = state.get("api_confirmed")
    if flag is None:
        return bool(state.get("api"))
    if isinstance(flag, str):
        return _norm_text(flag) in ("true", "yes", "1")
    return bool(flag)


def _norm_text(text: Any) -> str:
    return re.sub(r"[^0-9a-z]", "", str(text).lower())


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
    return (confirmed(gold) == confirmed(predicted) and normalise(gold.get("api")) == normalise(predicted.get("api"))
            and _pairs(gold) == _pairs(predicted))


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
    status = obj.get("api_status")
    if isinstance(status, dict):  # ToolDial's shape: api_status {api_name, required/optional parameters}
        api, slots = status.get("api_name"), {}
        for part in (status.get("required_parameters"), status.get("optional_parameters")):
            if not isinstance(part, (dict, type(None))):
                return None
            slots.update({k: v for k, v in (part or {}).items() if v not in ("", None)})
    else:
        api = obj.get("api", obj.get("api_name"))
        slots = obj.get("slots", obj.get("parameters", {}))
    if isinstance(api, str) and _norm_text(api) in ("none", "null", ""):
        api = None
    if api is not None and not isinstance(api, str):
        return None
    if not isinstance(slots, dict):
        return None
    state = {"api": api or None, "slots": slots}
    state["api_confirmed"] = confirmed({**obj, **state}) if "api_confirmed" in obj else bool(state["api"])
    return state


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

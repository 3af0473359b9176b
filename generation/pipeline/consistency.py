"""Does each API output agree with the branch the conversation then follows?

A conversation realised from a path calls the path's api nodes in order; the edge that leaves an
api node names the outcome ("Flight is available", "Order not found"). The *rule* decides where the
output schema makes it decidable: a boolean field, an enumerated field whose values include one
named in the outcome or both a positive and a negative value, an empty/non-empty result. Where it
cannot decide, the call is returned as *undecided* so that an optional LLM check can judge it.
Findings are warnings (rule ``CV-OUTCOME``), shown to annotators; they do not discard anything.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import networkx as nx

from .apis import ApiSpec
from .outcome import is_negative_outcome
from .typecheck import parse_type
from .validate import Violation
from .outcome import outcome_value


@dataclass
class ApiTurn:
    """One api call of a conversation with its output and the outcome label of the path's edge."""
    position: int          # index of the api message
    api: ApiSpec | None
    call: str
    output: Any
    outcome: str


def api_turns(g: nx.DiGraph, path: list[Any], messages: list[dict], apis: list[ApiSpec]) -> list[ApiTurn]:
    by_name = {a.name: a for a in apis}
    outcomes = []
    for i, n in enumerate(path):
        if g.nodes[n].get("type") == "api":
            nxt = path[i + 1] if i + 1 < len(path) else None
            outcomes.append(str(g.edges[n, nxt].get("label", "")) if nxt is not None else "")
    turns: list[ApiTurn] = []
    for pos, m in enumerate(messages):
        if m.get("role") != "api" or len(turns) >= len(outcomes):
            continue
        name = str(m.get("content", "")).split("(", 1)[0].strip()
        output: Any = None
        if pos + 1 < len(messages) and messages[pos + 1].get("role") == "api_output":
            try:
                output = json.loads(messages[pos + 1]["content"])
            except (ValueError, TypeError):
                output = None
        turns.append(ApiTurn(pos, by_name.get(name), m.get("content", ""), output, outcomes[len(turns)]))
    return turns


def judge(turn: ApiTurn) -> bool | None:
    """True when the output agrees with the outcome, False when it contradicts it, None when the
    schema does not decide."""
    api, out, label = turn.api, turn.output, turn.outcome
    if api is None or not label or label.lower() in ("done", "ok"):
        return None
    negative = is_negative_outcome(label)
    if api.outputs and isinstance(out, dict):
        verdicts = []
        for p in api.outputs:
            if p.name not in out:
                continue
            value = out[p.name]
            if p.enum:
                agreeing, decides = outcome_value(list(p.enum), label)
                if decides:
                    verdicts.append(str(value).lower() in {str(v).lower() for v in agreeing})
            elif isinstance(value, bool):
                verdicts.append(value is not negative)
        if verdicts:
            return all(verdicts)
        if any(isinstance(v, str) and v.strip().lower() == label.strip().lower() for v in out.values()):
            return True  # no field decides and the output says what the label says
        lists = [out[p.name] for p in api.outputs if p.name in out and isinstance(out[p.name], list)]
        if lists:
            return any(lists) != negative
        if not out:
            return negative or None
        return None
    try:
        head, _ = parse_type(api.output_type)
    except ValueError:
        return None
    value = out.get(api.output_name, out) if isinstance(out, dict) and len(out) == 1 else out
    if head == "bool" and isinstance(value, bool):
        return value is not negative
    if head in ("list", "set", "tuple") and isinstance(value, list):
        return bool(value) != negative
    if label.strip().lower() in str(out).lower():
        return True  # the output says what the label says
    return None


def outcome_violations(g: nx.DiGraph, path: list[Any], messages: list[dict],
                       apis: list[ApiSpec]) -> tuple[list[Violation], list[ApiTurn]]:
    """(rule findings, turns the rule could not decide)."""
    found, undecided = [], []
    for t in api_turns(g, path, messages, apis):
        verdict = judge(t)
        if verdict is False:
            found.append(Violation("CV-OUTCOME", f"message {t.position + 2}",
                                   f"the output of {t.api.name if t.api else t.call} contradicts the branch "
                                   f"taken next ({t.outcome!r})", "warning"))
        elif verdict is None and t.api is not None and t.outcome:
            undecided.append(t)
    return found, undecided

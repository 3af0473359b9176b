"""The fidelity audit of a conversation and of the tests cut from it (issue #28), pure Python.

Three checks, each a :class:`Finding` at a message index:

* **outcome** — an api_output contradicts the branch the path takes next (the edge label read by
  :mod:`.outcome`, judged by :func:`.consistency.judge`); needs the conversation graph and path;
* **value** — an api call's argument is not of the parameter's type, is not one of its
  enumerated values, or was never said before the call (by the user or an earlier api_output);
* **speech** — an assistant turn carries the chart's scaffolding ("Subgoal:", "Step 2.1:",
  ``snake_case`` names, [buttons], {placeholders}, the customer in the third person, API names) or
  a broken fragment ("Let me subgoal", "Do you are", "Let me 000 RMB").

A test (context up to ``position``, expected output at ``position``) fails when a finding lies at
or before its position: the mistake is in what the agent is shown or asked to produce.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import networkx as nx

from .apis import ApiSpec
from .consistency import api_turns, judge
from .extract import ApiCallParseError, parse_api_call
from .typecheck import matches
from .validate import Violation

KINDS = ("outcome", "value", "speech")


@dataclass(frozen=True)
class Finding:
    kind: str       # one of KINDS
    index: int      # message index in the conversation
    text: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_SCAFFOLD = [
    (re.compile(r"\b(sub)?goal\s*:", re.I), "a 'goal:' label"),
    (re.compile(r"\b(step|path|stage|phase)\s+\d+(\.\d+)*\s*:", re.I), "a step number"),
    (re.compile(r"\b(action|thought|observation)\s*:", re.I), "an agent label"),
    (re.compile(r"\b[a-z]+_[a-z_]+\b"), "a snake_case name"),
    (re.compile(r"[\[{][^\]}]*[\]}]"), "a [button] or {placeholder}"),
    (re.compile(r"\bthe (user|customer|caller)\b", re.I), "the customer in the third person"),
]
_FRAGMENTS = [
    (re.compile(r"\bLet me (?!(check|verify|look|search|find|see|take|try|review|validate|investigate|confirm|"
                r"help|know|get|ask|book|cancel|update|make|send|transfer|put|pull|connect|do|arrange)\b)\w+", re.I),
     "'Let me' before a word that is not an action"),
    (re.compile(r"\bDo you (are|is|were|was|can|will)\b", re.I), "'Do you' before an auxiliary"),
    (re.compile(r"\b(you|your) (you|your)\b", re.I), "a doubled pronoun"),
    (re.compile(r"(?<![.\d])\b\d+\. Let me\b"), "a number cut from its sentence"),
    (re.compile(r"[.?!]\s*[.?!]"), "an empty sentence"),
]


_CHECKS = _SCAFFOLD + _FRAGMENTS
# Every check in one alternation (each keeps its own case rule): a turn it does not match needs
# none of the eleven searches. Most turns are clean, and the audit reads every assistant turn of a
# release twice (before the freeze and from the frozen records).
_ANY_CHECK = re.compile("|".join(f"(?{'i' if p.flags & re.I else ''}:{p.pattern})" for p, _ in _CHECKS))


@lru_cache(maxsize=4096)
def _names_pattern(names: tuple[str, ...]) -> re.Pattern | None:
    """One search for every API name of a procedure (longest first, as whole words)."""
    kept = sorted({n for n in names if n and len(n) > 3}, key=lambda n: (-len(n), n))
    if not kept:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(n) for n in kept) + r")(?!\w)")


def speech_findings(text: str, tool_names: list[str]) -> list[str]:
    """What a person would not say in one assistant turn."""
    text = text or ""
    found = [why for pattern, why in _CHECKS if pattern.search(text)] if _ANY_CHECK.search(text) else []
    names = _names_pattern(tuple(tool_names))
    if names is not None and names.search(text):
        # Which names: each checked on its own, in the procedure's order (overlapping names such
        # as get_order and get_order_items are both reported when both appear).
        for name in tool_names:
            if name and len(name) > 3 and re.search(r"(?<!\w)" + re.escape(name) + r"(?!\w)", text):
                found.append(f"the API name {name}")
    return found


def _said_before(value: Any, messages: list[dict], upto: int) -> bool:
    texts = [str(m.get("content", "")) for m in messages[:upto] if m.get("role") in ("user", "api_output")]
    needle = str(value).strip().lower()
    if not needle:
        return True
    if isinstance(value, bool):
        return True  # a yes/no decision is the agent's reading of the dialogue
    variants = {needle, json.dumps(value).lower()}
    if isinstance(value, float) and value.is_integer():
        variants.add(str(int(value)))
    return any(v in t.lower() for t in texts for v in variants)


def value_findings(messages: list[dict], apis: list[ApiSpec]) -> list[Finding]:
    by_name = {a.name: a for a in apis}
    out: list[Finding] = []
    for i, m in enumerate(messages):
        if m.get("role") != "api":
            continue
        try:
            name, args = parse_api_call(str(m.get("content", "")))
        except ApiCallParseError as exc:
            out.append(Finding("value", i, f"the call cannot be read: {exc}"[:200]))
            continue
        api = by_name.get(name)
        for key, value in args.items():
            p = api.param(key) if api else None
            if p is not None and not matches(value, p.type):
                out.append(Finding("value", i, f"{name}({key}={value!r}) is not of type {p.type}"[:200]))
            elif p is not None and p.enum and str(value).lower() not in {str(e).lower() for e in p.enum}:
                out.append(Finding("value", i, f"{name}({key}={value!r}) is not one of {list(p.enum)[:8]}"[:200]))
            elif not _said_before(value, messages, i):
                out.append(Finding("value", i, f"{name}({key}={value!r}) was never said before the call"[:200]))
    return out


def outcome_findings(graph: nx.DiGraph | None, path: list[Any] | None, messages: list[dict],
                     apis: list[ApiSpec]) -> list[Finding]:
    if graph is None or not path or any(n not in graph for n in path):
        return []
    out = []
    try:
        turns = api_turns(graph, list(path), messages, apis)
    except (KeyError, TypeError):  # a path that does not follow the graph's edges decides nothing
        return []
    for t in turns:
        if judge(t) is False:
            out.append(Finding("outcome", t.position + 1,
                               f"the output of {t.api.name if t.api else t.call} contradicts the branch "
                               f"{t.outcome!r}"[:200]))
    return out


def audit_conversation(messages: list[dict], apis: list[ApiSpec], graph: nx.DiGraph | None = None,
                       path: list[Any] | None = None) -> list[Finding]:
    """Every finding of one conversation, in message order (messages that are not objects are
    treated as empty ones: the audit reads whatever a release holds)."""
    messages = [m if isinstance(m, dict) else {} for m in messages] if isinstance(messages, list) else []
    tools = [a.name for a in apis]
    found = outcome_findings(graph, path, messages, apis) + value_findings(messages, apis)
    for i, m in enumerate(messages):
        if m.get("role") == "assistant":
            found += [Finding("speech", i, f"{why}: {str(m.get('content', ''))[:120]!r}")
                      for why in speech_findings(str(m.get("content", "")), tools)]
    return sorted(found, key=lambda f: (f.index, f.kind))


def findings_for_test(findings: list[Finding], position: int) -> list[Finding]:
    """The findings that make the test cut at ``position`` fail."""
    return [f for f in findings if f.index <= position]


def summary(per_test: list[list[Finding]]) -> dict[str, Any]:
    """Counts over tests: how many were audited and failed, and failures by kind."""
    by_kind: Counter = Counter()
    findings: Counter = Counter()
    for found in per_test:
        for kind in {f.kind for f in found}:
            by_kind[kind] += 1
        findings.update(f.kind for f in found)
    return {"tests": len(per_test), "failed": sum(1 for f in per_test if f),
            "failed_by_kind": {k: by_kind.get(k, 0) for k in KINDS},
            "findings_by_kind": {k: findings.get(k, 0) for k in KINDS}}


def as_violations(findings: list[Finding], severity: str = "error") -> list[Violation]:
    """Audit findings as validator findings (rule ``AUDIT-<KIND>``), for the repair loop."""
    return [Violation(f"AUDIT-{f.kind.upper()}", f"message {f.index + 1}", f.text, severity) for f in findings]

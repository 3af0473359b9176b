"""A second, plain reading of "an API output agrees with the branch it takes", written from issue
#28's wording and not from ``generation.pipeline.outcome``: a failure label ("not found", "full",
"failed") needs a false flag, a failure value of an enumerated field, or empty lists; a label that
names one value of an enumerated field needs that value; a label no field can decide must be said
by the output itself. Returns one verdict per api call: "agrees", "contradicts" or "undecided"."""
from __future__ import annotations

import json
import re

FAILURE_WORDS = ["not", "no", "none", "nothing", "fail", "failed", "fails", "failure", "error", "unavailable",
                 "cannot", "can't", "isn't", "wasn't", "doesn't", "didn't", "full", "empty", "invalid", "denied",
                 "declined", "rejected", "missing", "unable", "unsuccessful", "expired", "insufficient", "false",
                 "sold", "wrong", "incorrect", "closed", "cancelled", "canceled", "locked", "busy", "occupied"]


def is_failure(text) -> bool:
    if isinstance(text, bool):
        return not text
    words = re.findall(r"[a-z']+", str(text).lower())
    return any(w in FAILURE_WORDS for w in words)


def _said(value, label: str) -> bool:
    return bool(re.search(r"(?<![a-z])" + re.escape(str(value).lower()) + r"(?![a-z])", label.lower()))


def verdict(api, output, label: str) -> str:
    if api is None or not label.strip():
        return "undecided"
    fails = is_failure(label)
    if api.outputs and isinstance(output, dict):
        decided = []
        for field in api.outputs:
            if field.name not in output:
                continue
            value = output[field.name]
            if field.enum:
                choices = [str(e) for e in field.enum]
                named = [c for c in choices if _said(c, label) and is_failure(c) == fails]
                if named:
                    best = max(named, key=len)
                    decided.append(str(value).lower() == best.lower())
                elif {is_failure(c) for c in choices} == {True, False}:
                    decided.append(is_failure(value) == fails)
            elif isinstance(value, bool):
                decided.append(value == (not fails))
        if decided:
            return "agrees" if all(decided) else "contradicts"
        if any(str(v).lower() == label.lower() for v in output.values()):
            return "agrees"
        lists = [v for v in output.values() if isinstance(v, list)]
        if lists:
            return "agrees" if any(lists) != fails else "contradicts"
        return "undecided"
    value = next(iter(output.values())) if isinstance(output, dict) and len(output) == 1 else output
    if isinstance(value, bool):
        return "agrees" if value == (not fails) else "contradicts"
    if isinstance(value, list):
        return "agrees" if bool(value) != fails else "contradicts"
    if label.lower() in json.dumps(output).lower():
        return "agrees"
    return "undecided"


def verdicts(graph, path, messages, apis) -> list[tuple[str, str, object]]:
    """(verdict, label, output) for every api call of a conversation realised along ``path``."""
    by_name = {a.name: a for a in apis}
    labels = [graph.edges[n, path[i + 1]].get("label", "") for i, n in enumerate(path[:-1])
              if graph.nodes[n].get("type") == "api"]
    out, k = [], 0
    for i, m in enumerate(messages):
        if m["role"] == "api" and k < len(labels):
            name = m["content"].split("(", 1)[0].strip()
            output = json.loads(messages[i + 1]["content"]) if i + 1 < len(messages) else None
            out.append((verdict(by_name.get(name), output, str(labels[k])), str(labels[k]), output))
            k += 1
    return out

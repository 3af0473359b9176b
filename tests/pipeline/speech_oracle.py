"""An independent reader of offline speech, written from issue #28's wording rather than from
``generation.pipeline.speech``: it lists what a person would not say — the chart's scaffolding
(Subgoal, Step 2.1, Action:, API names, snake_case or camelCase identifiers, [buttons],
{placeholders}, "the customer" in the third person) and broken fragments ("Let me subgoal",
"Do you are", "Let me 000 RMB", "your you name", a sentence that starts in lower case)."""
from __future__ import annotations

import re

LET_ME_VERBS = {"check", "verify", "look", "search", "find", "see", "take", "try", "review", "validate",
                "investigate", "confirm", "help", "know", "get"}
SCAFFOLD = [
    (r"\b(sub)?goal\b", "goal word"), (r"\b(step|path|stage|phase)\s+\d", "step number"),
    (r"\b(action|thought|observation|api|tool)\s*:", "label prefix"),
    (r"\b(api|apis|tool call|function call|oracle)\b", "tool word"),
    (r"[A-Za-z]+_[A-Za-z]+", "snake_case"), (r"\b[a-z]+[A-Z][a-z]+\w*\(", "call"),
    (r"[\[\]{}<>]", "bracket"), (r"\bthe (user|customer|client|caller)\b", "third person"),
    (r"⚠", "symbol"),
]
FRAGMENTS = [
    (r"\bDo you (are|is|were|was|can|will|have been)\b", "do you + auxiliary"),
    (r"\b(you|your) (you|your)\b", "doubled pronoun"), (r"\byou[’']s\b", "you's"),
    (r"\b(\w+) \1\b", "doubled word"), (r"\bLet me \d", "let me + number"),
    (r"\bI'd like to (a|an|the|my|your)\b", "want + article"),
    (r"\bgive me your (to|you|a|an|the|ask|gather|resume|determine|finali[sz]e)\b", "request of a verb"),
    (r"[.?!]\s*[.?!]", "empty sentence"), (r"\s[,.?!]", "space before punctuation"),
]


def problems(text: str, tool_names: list[str] = ()) -> list[str]:
    found = [f"{why}: {text!r}" for pattern, why in SCAFFOLD if re.search(pattern, text)]
    found += [f"{why}: {text!r}" for pattern, why in FRAGMENTS if re.search(pattern, text, re.I)]
    for name in tool_names:
        if name and re.search(r"\b" + re.escape(name) + r"\b", text):
            found.append(f"tool name {name}: {text!r}")
    for m in re.finditer(r"\bLet me (\w+)", text):
        if m.group(1).lower() not in LET_ME_VERBS:
            found.append(f"let me + {m.group(1)}: {text!r}")
    for sentence in re.split(r"(?<=[.?!])\s+", text.strip()):
        if sentence and sentence[0].isalpha() and sentence[0].islower():
            found.append(f"sentence in lower case: {text!r}")
    if text.strip() and text.strip()[-1] not in ".?!\"'":
        found.append(f"unfinished: {text!r}")
    return found

"""What the customer says when a conversation takes an edge of the chart (see :mod:`.speech` for
the assistant's side): an edge label names the user's choice ("User books again", "Service
Restored? No") and the user answers in the first person ("I'd like to book again.", "No.")."""
from __future__ import annotations

import re

from .speech import _SCAFFOLD, _sentence, to_you

_I_WANT = re.compile(r"^(?:the\s+)?(?:user|customer|client|caller|guest|passenger|patient)\s+", re.I)
_GENERIC_ANSWER = re.compile(r"^(?:the\s+)?(?:user|customer|client|caller|guest)\s+(?:answers|replies|responds|gives)"
                             r"(?:\s+the\s+question|\s+the\s+details|\s+an?\s+answer)?$", re.I)


def user_says(label: str) -> str:
    """What the customer says when they take the edge labelled ``label``."""
    text = " ".join((label or "").split()).strip(" .")
    if not text or _GENERIC_ANSWER.match(text):
        return "Sure."
    text = _SCAFFOLD.sub("", text).strip(" .") or text
    if "?" in text:  # "Service Restored? No (still down)" -> the answer to the chart's question
        answer = text.rsplit("?", 1)[1].strip().lower()
        return "Yes." if answer.startswith("yes") else "No." if answer.startswith("no") else "Okay."
    low = text.lower()
    if low.startswith("after ") or re.search(r"\bstep\b|\bpath\b", low):
        return "Okay, done."
    if low in ("yes", "y", "ok", "okay", "sure", "confirm", "confirmed", "agree", "true"):
        return "Yes, please."
    if low in ("no", "n", "decline", "declined", "refuse", "false", "cancel"):
        return "No, thank you."
    if low in ("done", "finish", "finished", "nothing else", "that's all", "end"):
        return "That's all, thank you."
    first_word = low.split()[0]
    if _I_WANT.match(text) or (first_word.endswith("s") and len(low.split()) > 1 and first_word not in (
            "is", "has", "was", "yes", "this", "its", "his", "plus", "less", "address", "access", "process", "status")):
        rest = _I_WANT.sub("", text)
        m = re.match(r"^(?:does not|doesn't|do not|did not)\s+(.*)$", rest, re.I)
        if m:
            return _sentence(f"I don't want to {m.group(1)}")
        m = re.match(r"^(?:wants|needs|would like|agrees|chooses|decides|asks)\s+(to\s+)?(.*)$", rest, re.I)
        if m:
            return _sentence(f"I'd like {m.group(1) or ''}{m.group(2)}" if m.group(2) else "Yes, please")
        m = re.match(r"^(is|has)\s+(.*)$", rest, re.I)
        if m:
            return _sentence(("I am " if m.group(1).lower() == "is" else "I have ") + m.group(2))
        verb, _, tail = rest.partition(" ")
        base = verb
        if verb.lower().endswith("ies"):
            base = verb[:-3] + "y"
        elif re.search(r"(ch|sh|ss|x|z)es$", verb.lower()):
            base = verb[:-2]
        elif verb.lower().endswith("s") and not verb.lower().endswith("ss"):
            base = verb[:-1]
        return _sentence(f"I'd like to {base.lower()} {tail}".strip())
    first = low.split()[0]
    if first in ("book", "cancel", "change", "check", "find", "get", "make", "order", "buy", "rent", "reserve",
                 "search", "update", "report", "request", "schedule", "add", "remove", "pay", "return", "open",
                 "close", "apply", "renew", "transfer", "track", "modify", "query", "inquire", "ask", "view"):
        return f"Hi, I'd like to {low}."
    return _sentence(to_you(text).replace("you ", "I ", 1) if low.startswith(("user ", "customer ")) else text)

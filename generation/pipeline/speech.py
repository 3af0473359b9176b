"""Turning chart text into things people say, for offline conversations.

A flowchart node is an instruction to the agent ("Ask the user for the order number, call
findOrder"); the assistant should say a message ("Could you tell me your order number?"). An
edge label names the user's choice ("User books again"); the user should answer ("I'd like to book
again."). These are rewrites of the chart's own words, never templates that ignore them.
"""
from __future__ import annotations

import json
import re
from typing import Any

_SUBJECT = r"(?:the\s+)?(?:user|customer|client|caller|guest|passenger|patient)"
_YOU = [(re.compile(r"\b" + _SUBJECT + r"'s\b", re.I), "your"), (re.compile(r"\b" + _SUBJECT + r"s?\b", re.I), "you"),
        (re.compile(r"\btheir\b", re.I), "your"), (re.compile(r"\bthem\b", re.I), "you"),
        (re.compile(r"\bthey\b", re.I), "you"), (re.compile(r"\bhis or her\b", re.I), "your"),
        (re.compile(r"\byou wants\b", re.I), "you want"), (re.compile(r"\byou needs\b", re.I), "you need"),
        (re.compile(r"\byou has\b", re.I), "you have"), (re.compile(r"\byou is\b", re.I), "you are"),
        (re.compile(r"\byou does\b", re.I), "you do")]
_TOOLISH = re.compile(r"\b(call|calls|calling|use|using|invoke|invoking|api|tool|returned|based on|query|"
                      r"check (?:if|whether) the (?:reservation|booking|request) is)\b", re.I)
_GREETING = re.compile(r"^(greet|welcome|start|begin|hello)\b", re.I)


def to_you(text: str) -> str:
    for pattern, repl in _YOU:
        text = pattern.sub(repl, text)
    return text


def _sentence(text: str) -> str:
    text = " ".join(text.split()).strip(" ,;")
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".?!" else text + "."


def _clauses(text: str, tool_names: list[str]) -> list[str]:
    parts = re.split(r"[;.]\s+|,\s*(?:and\s+|then\s+)?|\s+and then\s+|\s+then\s+|\s+and\s+(?=(?:ask|tell|"
                     r"inform|confirm|say|offer|notify|check|let|call|use|invoke|give|provide)\b)",
                     text.strip().rstrip("."))
    names = [n.lower() for n in tool_names]
    return [p.strip() for p in parts if p.strip() and not _TOOLISH.search(p)
            and not any(n in p.lower() for n in names) and not re.search(r"\w_\w|[a-z][A-Z]", p)]


def _summary(output: Any) -> str:
    if isinstance(output, dict):
        items = [(k, v) for k, v in output.items() if not isinstance(v, (dict, list)) or v]
        if not items:
            return ""
        return "; ".join(f"{k.replace('_', ' ')}: {json.dumps(v) if isinstance(v, (dict, list)) else v}"
                         for k, v in items[:6])
    return "" if output in (None, "", [], {}) else str(output)


def assistant_says(instruction: str, tool_names: list[str], last_output: Any = None) -> str:
    """What the agent says at a node whose text is ``instruction``."""
    text = " ".join(instruction.split())
    if not text or _GREETING.match(text):
        return "Hello! How can I help you today?"
    if re.match(r"^(thank|goodbye|bye|end)\b", text, re.I) or re.search(r"contact (us )?again", text, re.I):
        return "Thank you for contacting us. Have a good day!"
    said = []
    for clause in _clauses(text, tool_names) or [text]:
        c = to_you(clause)
        m = re.match(r"^(?:ask|request|collect|obtain|get|inquire)\s+(?:you\s+)?(?:for|about)?\s*(.+)$", c, re.I)
        if m and re.match(r"^(if|whether)\s+you\s+", m.group(1), re.I):
            rest = re.sub(r"^(if|whether)\s+you\s+", "", m.group(1), flags=re.I)
            wish = re.match(r"^(?:want|wants|would like|wish|wishes)\s+(to\s+)?(.*)$", rest, re.I)
            if wish:
                question = f"Would you like {wish.group(1) or ''}{wish.group(2)}"
            elif re.match(r"^(need|needs|have|has)\b", rest, re.I):
                question = "Do you " + re.sub(r"^(need|have)s\b", r"\1", rest)
            else:
                question = "Do you " + rest
            said.append(question.strip().rstrip(".?") + "?")
            continue
        if m and re.match(r"^(if|whether)\b", m.group(1), re.I):
            said.append(f"Could you tell me {m.group(1).strip().rstrip('.')}?")
            continue
        if m:
            said.append(f"Could you please give me {m.group(1).strip()}?")
            continue
        m = re.match(r"^(?:confirm|verify)\s+(?:with you\s+)?(?:that\s+|if\s+|whether\s+)?(.+)$", c, re.I)
        if m:
            what = re.sub(r"\s+with you$", "", m.group(1).strip().rstrip("."))
            said.append(f"Just to confirm: {what}?")
            continue
        m = re.match(r"^(?:inform|tell|notify|let)\s+(?:you\s+)?(?:know\s+)?(?:that\s+|of\s+|about\s+)?(.+)$", c, re.I)
        if m:
            said.append(_sentence(m.group(1)))
            continue
        m = re.match(r"^(?:say|explain|reply|respond|answer|mention)\s+(?:to you\s+)?(?:that\s+)?(.+)$", c, re.I)
        if m:
            said.append(_sentence(m.group(1)))
            continue
        m = re.match(r"^(?:offer|suggest|recommend|provide|give|show|present|share)\s+(?:you\s+)?(.+)$", c, re.I)
        if m:
            said.append(_sentence(f"I can offer you {m.group(1)}") if m.group(0).lower().startswith("offer")
                        else _sentence(f"Here is {m.group(1)}"))
            continue
        if re.match(r"^(you|your|the|a|an|it|there|this|that|we|our|all|no|nothing)\b", c, re.I):
            said.append(_sentence(c))
        else:
            said.append(_sentence("Let me " + c[0].lower() + c[1:]))
    summary = _summary(last_output)
    if summary and re.search(r"\b(details?|information|options?|results?|returned values)\b", text, re.I):
        said.append(f"Here is what I found: {summary}.")
    return " ".join(s for s in said if s) or "Let me check that for you."


_I_WANT = re.compile(r"^(?:the\s+)?(?:user|customer|client|caller|guest|passenger|patient)\s+", re.I)


def user_says(label: str) -> str:
    """What the customer says when they take the edge labelled ``label``."""
    text = " ".join((label or "").split()).strip(" .")
    if not text:
        return "Okay."
    low = text.lower()
    if low in ("yes", "y", "ok", "okay", "sure", "confirm", "confirmed", "agree", "true"):
        return "Yes, please."
    if low in ("no", "n", "decline", "declined", "refuse", "false", "cancel"):
        return "No, thank you."
    if low in ("done", "finish", "finished", "nothing else", "that's all", "end"):
        return "That's all, thank you."
    first_word = low.split()[0]
    if _I_WANT.match(text) or (first_word.endswith("s") and len(low.split()) > 1 and first_word not in (
            "is", "has", "was", "yes", "this", "its", "his", "plus", "less", "address", "access", "process")):
        rest = _I_WANT.sub("", text)
        m = re.match(r"^(?:does not|doesn't|do not|did not)\s+(.*)$", rest, re.I)
        if m:
            return _sentence(f"I don't want to {m.group(1)}")
        m = re.match(r"^(?:wants|needs|would like|agrees|chooses|decides|asks)\s+(?:to\s+)?(.*)$", rest, re.I)
        if m:
            return _sentence(f"I'd like to {m.group(1)}")
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
    if first in ("wants", "needs"):
        return _sentence("I " + first[:-1] + low[len(first):])
    return _sentence(text)

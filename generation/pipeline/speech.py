"""Turning chart text into things people say, for offline conversations.

A flowchart node is an instruction to the agent ("Ask the user for the order number, call
findOrder", "Subgoal: ask for the budget", "Step 3.1: Verify Network Service Status"); the
assistant should say a message ("Could you please give me the order number?"). An edge label names
the user's choice ("User books again"); the user should answer ("I'd like to book again."). A small
set of rules, applied clause by clause, rewrites the chart's own words:

1. text that is already speech (a question, or a sentence opening with I, we, could, sorry ...) is
   said as written, with ``{placeholders}`` filled from the values the conversation holds;
2. scaffolding is removed: ``Subgoal:``/``Step 2.1:``/``Action:`` prefixes, numbering, tool calls
   and the clauses about returned values, UI steps (click, enter into [a form]), notes to the agent
   (remember, make sure, if ... with no consequence);
3. each remaining clause is rewritten by its leading verb: ask -> a question, tell/say/explain -> a
   statement in the agent's voice, confirm -> a confirmation, offer/suggest -> an offer,
   give/show/read -> "Here is ...", check/verify/look up -> "Let me check ...", apologise,
   greet, thank; a bare field name ("Full name - first and last") -> a request for it;
4. whatever leaves nothing to say becomes "Let me look into that for you."

"Let me" is only ever followed by one of the agent's own verbs (check, verify, look, search, find,
see, take care), never by the chart's words.
"""
from __future__ import annotations

import json
import re
from typing import Any, Callable

_SUBJECT = r"(?:the\s+)?(?:user|customer|client|caller|guest|passenger|patient|employee)(?!\s+(?:name|id|number|email|type|list|count|room|house|services?)\b)"
_YOU = [(re.compile(r"\b" + _SUBJECT + r"['’]s\b", re.I), "your"), (re.compile(r"\b" + _SUBJECT + r"s?\b", re.I), "you"),
        (re.compile(r"\btheir\b", re.I), "your"), (re.compile(r"\bthem\b", re.I), "you"),
        (re.compile(r"\bthey\b", re.I), "you"), (re.compile(r"\bhis or her\b", re.I), "your"),
        (re.compile(r"\byou (want|need|do|wishe|prefer|agree|choose|decide|like|think|believe)s\b", re.I), r"you \1"),
        (re.compile(r"\byou has\b", re.I), "you have"), (re.compile(r"\byou is\b", re.I), "you are"),
        (re.compile(r"\byou was\b", re.I), "you were"), (re.compile(r"\byou doesn't\b", re.I), "you don't")]
_AGENT_VOICE = [(re.compile(r"\byou will\b", re.I), "I will"), (re.compile(r"\byou'll\b", re.I), "I'll"),
                (re.compile(r"\byou can\b", re.I), "I can"), (re.compile(r"\byou cannot\b", re.I), "I cannot"),
                (re.compile(r"\byou are\b", re.I), "I am"), (re.compile(r"\byour\b", re.I), "my"),
                (re.compile(r"\byou\b", re.I), "I")]
_SCAFFOLD = re.compile(r"^\s*(?:(?:(?:sub)?goals?|steps?|paths?|stages?|phases?|actions?|notes?|tasks?|instructions?|"
                       r"thoughts?|observations?|nodes?)\s*[\d.]*\s*[:：.)-]|\d+(?:\.\d+)*[.):]|[-*•>])\s*", re.I)
_TITLE_PREFIX = re.compile(r"^\s*(?:paths?|stages?|phases?|(?:sub)?goals?)\b", re.I)
_TOOLISH = re.compile(r"\b(call|calls|calling|invoke|invoking|api|apis|tool|tools|function|functions|returned|"
                      r"returns|oracle|system|form|button|database|query|queries)\b|\w_\w|(?-i:[a-z][A-Z])|\[[^\]]*\]|\(\w*\)|"
                      r"\bfunctions\.\w+", re.I)
_TAIL = re.compile(r"\s+(?:based on|according to|from|using|with|via|by calling|by using)\s+(?:the\s+)?"
                   r"(?:returned|result|results|output|response|api|tool|functions?\b|\w+_\w+|(?-i:[a-z]+[A-Z])).*$", re.I)
_SPEECH = re.compile(r"^(i|i'm|i've|i'll|i'd|we|we're|we'll|could|can|would|will|what|when|where|which|who|whom|how|"
                     r"is|are|do|does|did|may|might|shall|please|sure|thank|thanks|sorry|unfortunately|great|ok|okay|"
                     r"alright|right|hello|hi|hey|your|here|perfect|excellent|certainly|of course|no problem|yes|"
                     r"good|welcome|just|at|for|with|in|on|to|one|all right|got it|understood|noted|done|should|have|has|was|were|am|"
                     r"must|fantastic|wonderful|glad|oh|let me|let us|there is|there are|that['’]s|it['’]s)\b", re.I)
_AGENT_VERBS = re.compile(r"^(enter|select|click|press|type|record|fill|submit|pull up|open|generate|update|"
                          r"process|pick|choose|send|reset|create|add|remove|change|escalate|transfer|book|cancel|"
                          r"refund|apply|move|mark|write|input|log|note down|search|look up|find|validate|resume|gather|"
                          r"enable|disable|run|determine|decide|perform|finali[sz]e|resend|instruct|activate|"
                          r"retrieve|fetch|get the|locate|proceed|send|transfer)\b", re.I)
_CHECK = re.compile(r"^(check|verify|look up|look into|look for|review|validate|investigate|confirm internally)\s+(.*)$",
                    re.I)
_DROP = re.compile(r"^(remember|make sure|ensure|note|skip|go to|go back|return to|continue|wait|repeat|do not|"
                   r"don't|never|feel free|be sure|as always|as usual|"
                   r"assume|if you are here|you can bypass|this is accomplished|the main effort|otherwise)\b", re.I)
_FINITE = re.compile(r"\b(is|are|was|were|has|have|had|can|cannot|can't|will|won't|would|could|should|did|does|do|"
                     r"doesn't|don't|isn't|aren't|wasn't|must|may|might|\w+ed|\w+n't|means|made|says|wants|needs|works|looks|"
                     r"seems|goes|comes|takes|gets|knows|thinks|stays|risks|keeps|applies|depends|allows|shows)\b", re.I)
_PLACEHOLDER = re.compile(r"\{(\w+)(?::[^{}]*)?\}")
FALLBACK = "Let me look into that for you."
GREETING = "Hello! How can I help you today?"
GOODBYE = "Thank you for contacting us. Have a good day!"


def to_you(text: str) -> str:
    for pattern, repl in _YOU:
        text = pattern.sub(repl, text)
    return text


def _agent_voice(text: str) -> str:
    for pattern, repl in _AGENT_VOICE:
        text = pattern.sub(repl, text)
    return to_you(text)


def _sentence(text: str, end: str = ".") -> str:
    text = " ".join(text.split()).strip(" ,;:-")
    if not text:
        return ""
    text = re.sub(r"\bi\b", "I", text)
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".?!" else text + end


def _clauses(text: str) -> list[str]:
    text = re.sub(r"(?:\s+and)?\s*\[[^\]]*\]", "", text)  # [Buttons] of a tool's screen
    parts = re.split(r";\s*|(?<=[a-z)\]\"'])[.!]\s+(?=[A-Z])|\s+>\s+|\s*<or>\s*|\s*\n\s*|,\s*(?:and\s+)?then\s+|\s+and then\s+|"
                     r"\s+then\s+|(?:,\s*|,?\s+and\s+)(?=(?:ask|tell|inform|confirm|say|offer|notify|check|let|call|use|"
                     r"invoke|give|provide|explain|suggest|read|share|show|thank|apologi[sz]e|enter|click|select|action:)\b)",
                     text.strip())
    return [p.strip().rstrip(".") for p in parts if p and p.strip(" .")]


def _values(last_output: Any, known: dict[str, Any] | None) -> dict[str, Any]:
    flat: dict[str, Any] = {k.lower(): v for k, v in (known or {}).items()}
    stack = [last_output]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for k, v in item.items():
                if isinstance(v, (dict, list)):
                    stack.append(v)
                else:
                    flat[str(k).lower()] = v
        elif isinstance(item, list):
            stack += item[:1]
    return flat


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _fill(text: str, values: dict[str, Any], make: Callable[[str, str], Any] | None) -> str:
    """``{balance:d}`` -> the value the conversation holds, else one ``make(name, type)`` draws for
    it; without ``make``, a sentence whose value is unknown is left out."""
    if not _PLACEHOLDER.search(text):
        return text
    keyed = {_key(k): v for k, v in values.items()}
    out = []
    for sentence in re.split(r"(?<=[.?!])\s+|\n+", text):
        found = True
        for m in _PLACEHOLDER.finditer(sentence):
            k = _key(m.group(1))
            if k not in keyed and make is not None:
                fmt = (m.group(0).split(":", 1)[1:] or ["s"])[0].strip("}")
                keyed[k] = make(m.group(1), "int" if fmt.endswith("d") else "float" if fmt.endswith("f") else "str")
            found = found and k in keyed
        if found:
            out.append(_PLACEHOLDER.sub(lambda m: str(keyed[_key(m.group(1))]).rstrip(".?!") or "-", sentence))
    return " ".join(out)


def _summary(output: Any) -> str:
    """An output read out: ``ticket number: TN1; berth: 12`` (flags and empty fields are left to
    the sentence the chart wrote)."""
    if isinstance(output, dict):
        items: list[str] = []
        stack = list(output.items())
        while stack and len(items) < 6:
            k, v = stack.pop(0)
            if isinstance(v, dict):
                stack = list(v.items()) + stack
            elif isinstance(v, list):
                if v:
                    items.append(f"{_words(k)}: " + ", ".join(_plain(x) for x in v[:3]))
            elif not isinstance(v, bool) and v not in (None, ""):
                items.append(f"{_words(k)}: {v}")
        return "; ".join(items)
    return "" if output in (None, "", [], {}) or isinstance(output, bool) else _plain(output)


def _words(key: Any) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", str(key)).replace("_", " ").lower()


def _plain(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{_words(k)} {v}" for k, v in value.items() if not isinstance(v, (dict, list)))
    return str(value)


def _is_title(text: str) -> bool:
    words = re.findall(r"[A-Za-z][\w'-]*", text)
    return bool(words) and len(words) <= 6 and not _FINITE.search(text) and all(
        w[0].isupper() or w.lower() in ("and", "or", "of", "the", "a", "to", "for", "in", "on") for w in words)


def _lower_title(text: str) -> str:
    """``Network Service Status`` -> "network service status" (acronyms such as SIM stay)."""
    return " ".join(w if (w.isupper() and len(w) > 1) or re.search(r"\d", w) else w.lower() for w in text.split())


def _question(rest: str) -> str:
    """``you want to book again`` -> "Would you like to book again?" (an "ask whether" clause)."""
    m = re.match(r"^you\s+(?:want|would like|wish|like|prefer)\s+(to\s+)?(.*)$", rest, re.I)
    if m:
        return f"Would you like {m.group(1) or ''}{m.group(2)}?"
    m = re.match(r"^you\s+(are|were|can|could|will|would|should|have been|had)\s+(.*)$", rest, re.I)
    if m:
        aux = m.group(1).split()[0]
        return f"{aux.capitalize()} you {m.group(2)}?"
    m = re.match(r"^you\s+(\w+)\b(.*)$", rest, re.I)
    if m:
        return f"Do you {m.group(1)}{m.group(2)}?"
    m = re.match(r"^(.+?)\s+(is|are|was|were|can|will|would|has|have)\s+(.*)$", rest, re.I)
    if m and len(m.group(1).split()) <= 5:
        return f"{m.group(2).capitalize()} {m.group(1)} {m.group(3)}?"
    m = re.match(r"^(.+?)\s+(\w+?)(?:e?s)\b(.*)$", rest, re.I)  # "another sailing suits" -> "Does another sailing suit?"
    if m and len(m.group(1).split()) <= 4:
        return f"Does {m.group(1)} {re.sub(r'ie$', 'y', m.group(2))}{m.group(3)} you?"
    return f"Could you tell me whether {rest}?"


def _question_of(text: str) -> str:
    """``change plan or refuel data`` -> "Would you like to change plan or refuel data?"."""
    if re.match(r"^(do|does|did|is|are|can|could|would|will|have|has|should|what|which|when|where|who|how)\b", text, re.I):
        return _sentence(text, "?")
    return f"Would you like to {text[0].lower() + text[1:]}?"


def _noun(phrase: str) -> str:
    phrase = re.sub(r"\s+(?:from|of|with)\s+you$", "", phrase.strip())
    if re.match(r"^(the|a|an|your|my|any|some|this|that|these|those|which|what|how|when|where|who|whether|if)\b",
                phrase, re.I):
        return phrase
    return "your " + phrase


def _say_clause(raw: str, tool_names: list[str], summary: str) -> str:
    c = _SCAFFOLD.sub("", raw).strip(" .,:")
    c = re.sub(r"^(?:and|also|then|finally|first|next|afterwards|now|lastly|in this case|otherwise|alternatively|"
               r"in that case),?\s+", "", c, flags=re.I)
    if re.match(r"^(for|in|to|as|at|with|on|by)\b", c, re.I) and len(c.split()) <= 3:
        return ""  # a lead-in cut from its sentence ("For these", "To do this")
    if not c or raw.rstrip().endswith(":"):  # a heading or a lead-in ("Bronze members:", "To do this:")
        return ""
    if re.match(r"^\{\d+\}", c):  # a sentence made of the chart's own values
        return _sentence(c)
    if re.match(r"^(if|when|once|after|unless|whenever)\b", c, re.I) and not raw.rstrip().endswith("?"):
        # a condition: the node was reached on that branch; say the consequence
        head, sep, tail = c.partition(",")
        if not sep:
            return ""
        c = tail.strip()
    c = _TAIL.sub("", c)
    low = c.lower()
    if _DROP.match(low) or any(n.lower() in low for n in tool_names if n):
        return ""
    if re.match(r"^(greet|welcome|start|begin|hello)\b", low):
        return GREETING
    if re.match(r"^(thank|goodbye|bye|say goodbye|end the conversation|close the conversation)\b", low):
        return GOODBYE
    m = re.match(r"^you\s+(can|cannot|can't|will|should|must|may|need to|want to|have to)\s+(.*)$", c, re.I)
    if m:  # the chart talks to the agent: say it in the agent's voice
        verb = {"should": "will", "must": "will", "need to": "will", "want to": "will", "have to": "will",
                "may": "can"}.get(m.group(1).lower(), m.group(1).lower())
        return _sentence(f"I {verb} {to_you(m.group(2))}")
    m = re.match(r"^" + _SUBJECT + r"s?\s+(wants?|needs?|would like|is trying|has|have|believes?|thinks?|cannot|can't)"
                 r"\b(.*)$", c, re.I)
    if m:
        return _sentence(f"I understand {to_you(c)}")
    m = re.match(r"^help\s+(?:" + _SUBJECT + r"|them)\s+(.*)$", c, re.I)
    if m:
        return _sentence(f"Let me help you {to_you(m.group(1))}")
    m = re.match(r"^(?:have|instruct|remind|get|tell|ask)\s+(?:" + _SUBJECT + r"|them)\s+(?:to\s+)?"
                 r"((?:check|search|try|log|refresh|close|restart|open|look|enter|go|click|make|reset|update|select|"
                 r"clear|wait|confirm|use|turn|reboot|re\w+)\b.*)$", c, re.I)
    if m:
        return f"Could you please {to_you(m.group(1))}?"
    m = re.match(r"^apologi[sz]e\s*(?:to\s+(?:" + _SUBJECT + r"|them)\s*)?(for\s+|that\s+|:\s*)?(.*)$", c, re.I)
    if m:
        what = _agent_voice(m.group(2)) if m.group(2) else ""
        if not what:
            return "I'm sorry about that."
        return _sentence(f"I'm sorry for {what}" if (m.group(1) or "").startswith("for") else f"I'm sorry, {what}")
    if _SPEECH.match(c) and not _TOOLISH.search(c):
        return _sentence(c, "?" if re.match(r"^(could|can|would|will|what|when|where|which|who|how|is|are|do|does|"
                                              r"did|may|shall)\b", low) else ".")
    if _TOOLISH.search(c) and not re.match(r"^(ask|tell|inform|say|explain)\b", low):
        return ""
    m = re.match(r"^(?:ask|request|collect|obtain|inquire|enquire|get)\s+(?:" + _SUBJECT + r"\s+|them\s+)?(.*)$", c, re.I)
    if m:
        rest = to_you(re.sub(r"\s+from\s+" + _SUBJECT + r"$", "", m.group(1).strip(), flags=re.I))
        rest = re.sub(r"\s+(?:as well|too|also)$", "", rest)
        w = re.match(r"^to\s+(.*)$", rest, re.I)
        if w:
            return f"Could you please {w.group(1)}?"
        w = re.match(r"^(?:you\s*)?:\s*(.*?)\??$", rest, re.I)
        if w:
            return _question_of(w.group(1))
        w = re.match(r"^(?:if|whether)\s+(.*)$", rest, re.I)
        if w:
            return _question(w.group(1))
        w = re.match(r"^(what|which|when|where|who|how|why)\b(.*)$", rest, re.I)
        if w:
            return f"Could you tell me {w.group(1).lower()}{w.group(2)}?"
        rest = re.sub(r"^(?:for|about)\s+", "", rest, flags=re.I)
        if not rest or _TOOLISH.search(rest):
            return "Could you please give me the details?"
        return f"Could you please give me {_noun(rest)}?"
    m = re.match(r"^(?:tell|inform|notify|let|say to|explain to|remind)\s+(?:" + _SUBJECT + r"|them|him|her)?\s*"
                 r"(?:know\s+)?(?:that\s+|of\s+|about\s+)?(.*)$", c, re.I)
    if m is None:
        m = re.match(r"^(?:say|explain|reply|respond|answer|mention|state|report)\s+(?:that\s+)?(.*)$", c, re.I)
    if m:
        what = m.group(1).strip()
        if not what or _TOOLISH.search(what):
            return ""
        if not _FINITE.search(what):  # "Tell the fare" -> "Here is the fare"
            return _here(what, summary)
        return _sentence(_agent_voice(what))
    m = re.match(r"^(?:confirm|verify)\s+with\s+(?:" + _SUBJECT + r"|them)\s+(?:that\s+|if\s+|whether\s+)?(.*)$", c, re.I)
    if m:
        return f"Just to confirm: {to_you(m.group(1))}?"
    m = re.match(r"^confirm\s+(?:that\s+)?(.*)$", c, re.I)
    if m:
        return _sentence(f"I can confirm {to_you(m.group(1))}")
    m = re.match(r"^(?:offer|suggest|recommend|propose)\s+(?:" + _SUBJECT + r"\s+|them\s+)?(.*)$", c, re.I)
    if m:
        what = to_you(m.group(1))
        if what.lower().startswith("to "):
            return _sentence(f"I can {what[3:]} for you")
        return _sentence(f"I can offer you {what}" if low.startswith("offer") else f"May I suggest {what}", 
                         "." if low.startswith("offer") else "?")
    m = re.match(r"^(?:give|provide|show|present|share|read|list|display)\s+(?:" + _SUBJECT + r"\s+|them\s+)?"
                 r"(.*?)(?:\s+out)?(?:\s+to\s+" + _SUBJECT + r")?$", c, re.I)
    if m:
        return _here(m.group(1), summary)
    if re.search(r"\b(?:path|step)\s+\d", c, re.I):
        return ""
    done = None if re.match(r"^(you|i|we|it|they|this|that|everything|all)\b", c, re.I) else re.match(
        r"^(\w+(?:\s+\w+){0,2})\s+(resolved|completed|complete|cancell?ed|canceled|refunded|booked|"
                    r"confirmed|done|restored|fixed|sent|updated)$", c, re.I)
    if done:
        return _sentence(f"Your {_lower_title(done.group(1))} is {done.group(2).lower()}")
    m = _CHECK.match(c)
    if m:
        what = to_you(m.group(2))
        what = re.sub(r"^(?:if|whether)\s+", "whether ", what, flags=re.I)
        return _sentence(f"Let me {m.group(1).lower()} {_lower_title(what) if _is_title(what) else what}")
    m = re.match(r"^try\s+to\s+(.*)$", c, re.I)
    if m:
        return _sentence(f"Let me try to {to_you(m.group(1))}")
    if _AGENT_VERBS.match(low):
        return "Let me take care of that for you."
    if _is_title(c) and len(c.split()) <= 6 and _TITLE_PREFIX.match(raw):
        return _sentence(f"Let me look into your {_lower_title(c)}")
    if not _FINITE.search(c) and len(c.split()) <= 8:  # a field name: "Full name - first and last"
        field = re.split(r"\s+[-–]\s+", c)[0].strip()
        return f"Could you please give me {_noun(_lower_title(field))}?"
    if re.match(r"^(you|your|the|a|an|it|there|this|that|these|we|our|all|no|nothing|each|every|both)\b", c, re.I):
        return _sentence(to_you(c))
    return ""


def _here(what: str, summary: str) -> str:
    what = to_you(what.strip())
    last = what.split(" and ")[0].split()[-1].lower() if what.split() else ""
    plural = last.endswith("s") and not last.endswith(("ss", "us", "is")) and last not in ("news", "gas", "this")
    verb = "are" if plural or " and " in what else "is"
    if summary:
        return _sentence(f"Here {verb} {what}: {summary}")
    return _sentence(f"Here {verb} {what}")


def assistant_says(instruction: str, tool_names: list[str], last_output: Any = None,
                   known: dict[str, Any] | None = None, make: Callable[[str, str], Any] | None = None) -> str:
    """What the agent says at a node whose text is ``instruction`` (see the module docstring);
    ``{placeholders}`` take the conversation's values (``known``, the last output) or ``make``'s."""
    text = " ".join(str(instruction or "").replace("\n", " \n ").split(" "))
    text = re.sub(r"[^\w\s.,;:?!'\"’()/{}\[\]<>&$%@#+-]", "", text).strip()  # emoji and symbols
    if not text.strip() or re.match(r"^(greet|welcome|hello|start)\b", text, re.I):
        return GREETING
    slots: list[str] = []

    def hold(m: re.Match) -> str:
        slots.append(m.group(0))
        return "{%d}" % (len(slots) - 1)

    text = _PLACEHOLDER.sub(hold, text)  # said as written, filled at the end
    text = re.sub(r"(?:,\s*|\s+)(?:and\s+)?(?:then\s+)?(?:action|api|tool)\s*:\s*[\w.]+(?:\([^)]*\))?", "", text,
                  flags=re.I)
    text = re.sub(r"\s+", " ", text).strip()
    summary = _summary(last_output)
    said: list[str] = []
    for clause in _clauses(text):
        s = _say_clause(clause, tool_names, summary)
        if s and s not in said:
            said.append(s)
            if s.startswith("Here ") and summary:
                summary = ""  # said once
    if summary and said and re.search(r"\b(details?|information|options?|results?|returned values)\b", text, re.I):
        said.append(f"Here is what I found: {summary}.")
    spoken = re.sub(r"\{(\d+)\}", lambda m: slots[int(m.group(1))], " ".join(said))
    return _fill(spoken, _values(last_output, known), make) or FALLBACK


from .user_speech import user_says  # noqa: E402,F401 (the customer's side, re-exported)

"""Which tools a chart state *calls*, as opposed to mentions.

A call is written, in FlowBench's release and in the charts people write:

* a verb before the tool: "use/call/invoke X" (also "using/calling/invoking X", "call the X tool",
  "query X", "through the X interface"), and chains "call X and Y", "call X, then Y";
* the toolbox spelling ``API: X`` / ``API:X`` (full-width colon too), alone or after a verb
  ("call API:searchHotel", "call API: searchHotel", "invoke the API: X");
* the ReAct spelling ``Action: X`` and the ``functions.X`` prefix the FlowBench prompt mentions;
* function-call syntax ``X(...)`` / ``call X(city, date)``;
* naming the tool as a tool: "the X API", "the 'X' tool";
* a state whose whole text is the tool (``C[checkSeat]``, ``C[API:checkSeat]``, ``C[checkSeat()]``).

A mention of an earlier call's outcome ("based on the returned values of X", "if X returns ...",
"the result of calling X") is not a call. Tool names match case-insensitively; the caller reports a
differing case.
"""
from __future__ import annotations

import re

from ..apis import ApiSpec

_CALL_VERB = r"(?:use|uses|using|used|call|calls|calling|invoke|invokes|invoking|utili[sz]e|utili[sz]ing|" \
             r"execute|executing|run|running|trigger|triggering|query|querying|request|requesting|via|through)"
_FILLER = r"(?:\s+(?:the|a|an|this|that|tool|tools|api|apis|function|interface|service|named|called|" \
          r"method|endpoint|action))*"
_PREFIX = r"(?:(?:api|action|function|tool)\s*[:：]\s*|functions\.)?"
_JOIN = r"(?:\s*(?:,|and|then|&|/|or)\s*(?:(?:the|tool|api|then)\s+)*)"
_QUOTE = "[\"'`‘’“”]?"
_TAIL = r"(?:\s*(?:tool|api|function|interface|service|\(\s*\)))?"

_REFERS_BACK = re.compile(r"((result|output|response|return\w*|outcome|value|information|details?|data)s?\s+(of|from)|"
                          r"(returned|provided|given|obtained|produced)\s+by)\s+(the\s+)?"
                          r"(calling\s+|(api|tool|function)\s*[:：]\s*)?$", re.IGNORECASE)
_CONDITION = re.compile(r"\b(if|when|whether|unless|once)\s+(the\s+)?(api\s*[:：]\s*)?$", re.IGNORECASE)


def tool_pattern(tools: list[ApiSpec]) -> str:
    names = sorted((re.escape(t.name) for t in tools), key=len, reverse=True)
    return r"(?<![\w])(" + "|".join(names) + r")(?![\w])"


def whole_call(text: str, written: str) -> bool:
    """Whether the whole text is one call of the tool written ``written`` (an api node of its own)."""
    return re.fullmatch(r"\s*(?:call\s+)?" + _PREFIX + _QUOTE + re.escape(written) + _QUOTE
                        + r"(\s*(tool|api|function|\(.*\)))?\s*\.?\s*", text, re.IGNORECASE | re.DOTALL) is not None


def tool_calls(text: str, tools: list[ApiSpec]) -> list[tuple[str, str]]:
    """(tool name, name as written) for every tool the text calls, in order, without repeats."""
    if not tools or not text:
        return []
    name = tool_pattern(tools)
    canonical = {t.name.lower(): t.name for t in tools}
    hits: list[tuple[int, str]] = []
    flags = re.IGNORECASE
    whole = re.fullmatch(r"\s*(?:call\s+)?" + _PREFIX + _QUOTE + name + _QUOTE + _TAIL + r"\s*(?:\(.*\))?\s*\.?\s*",
                         text, flags | re.DOTALL)
    if whole:
        hits.append((0, whole.group(1)))
    verb = re.compile(r"\b" + _CALL_VERB + _FILLER + r"(?:\s*[:：]\s*|\s+)" + _PREFIX + _QUOTE + name + _QUOTE + _TAIL,
                      flags)
    prefixed = re.compile(r"(?<![\w])(?:api|action)\s*[:：]\s*" + _QUOTE + name + _QUOTE + r"|(?<![\w])functions\." + name,
                          flags)
    syntax = re.compile(name + r"\(", flags)
    chained = re.compile(_JOIN + _PREFIX + _QUOTE + name + _QUOTE + _TAIL, flags)
    # "the X API", "the 'X' tool", "X interface": naming the tool as a tool is a call.
    named = re.compile(_QUOTE + name + _QUOTE + r"\s+(?:tool|api|interface|function|service)\b", flags)

    def about_earlier(start: int) -> bool:
        before = text[:start]
        return bool(_REFERS_BACK.search(before) or _CONDITION.search(before))

    for pattern in (named, prefixed, syntax):
        for m in pattern.finditer(text):
            group = 1 if m.group(1) is not None else 2
            if not about_earlier(m.start()):
                hits.append((m.start(group), m.group(group)))
    for m in verb.finditer(text):
        if _REFERS_BACK.search(text[:m.start()]):
            continue  # "the result of calling X" is about an earlier call
        hits.append((m.start(1), m.group(1)))
        pos = m.end()
        while True:
            more = chained.match(text, pos)
            if not more:
                break
            hits.append((more.start(1), more.group(1)))
            pos = more.end()
    out: list[tuple[str, str]] = []
    for _, written in sorted(hits):
        tool = canonical[written.lower()]
        if all(tool != t for t, _ in out):
            out.append((tool, written))
    return out


def inferred_tools(text: str) -> list[str]:
    """Tool names a chart writes in the toolbox spelling ``API: name`` (used when no tool list is given)."""
    return list(dict.fromkeys(m.group(1) for m in re.finditer(r"(?<![\w])API\s*[:：]\s*([A-Za-z_]\w*)", text)))


def mentioned_tools(text: str, tools: list[ApiSpec]) -> list[str]:
    """Tool names that appear in the text (called or not), as written."""
    if not tools:
        return []
    return list(dict.fromkeys(m.group(1) for m in re.finditer(tool_pattern(tools), text, re.IGNORECASE)))

"""Dialogue actions (ToolDial's taxonomy, Tables 6 and 7) on ALMITA conversations. Pure, no Django.

ToolDial labels every turn with one of 16 actions (8 user, 8 system). An ALMITA conversation has no
retriever (the agent is given its APIs), so *retriever call* never occurs; *request-multi* is a
*request*. The rest map onto ALMITA roles as follows (docs/metrics.md has the table):

=====================  ==============================================================================
role                   action
=====================  ==============================================================================
api                    ``call``
api_output             none (an observation, not an action)
assistant              ``system_bye`` (goodbye / "anything else"), ``response`` (right after an
                       api_output), ``response_fail`` (cannot do it), ``suggest`` (a proposal asking
                       for agreement), ``clarify`` (asks what the user means), ``request`` (asks for
                       information), otherwise ``response``
user                   first turn: ``inform_intent_clear_add`` (carries a value such as an id),
                       ``inform_intent_vague`` (no specific need) or ``inform_intent_clear``; later:
                       ``user_bye``, ``fail_inform`` ("I don't know it"), ``affirm``, ``negate``,
                       otherwise ``inform``
=====================  ==============================================================================

The rules are lexical and deterministic, so a label can be recomputed from the text anywhere
(release rows, exports, an agent's answer) and always agrees with the stored one.
"""
from __future__ import annotations

import re
from typing import Any

USER_ACTIONS = ("inform_intent_clear", "inform_intent_clear_add", "inform_intent_vague", "inform",
                "fail_inform", "affirm", "negate", "user_bye")
SYSTEM_ACTIONS = ("request", "response", "clarify", "suggest", "response_fail", "system_bye", "call")
ACTIONS = SYSTEM_ACTIONS + USER_ACTIONS
NOT_EXPRESSIBLE = {"retriever_call": "ALMITA agents are given their APIs; there is no retriever",
                   "request_multi": "labelled request (a pick from a list is still a request)"}


def _has(pattern: str, text: str) -> bool:
    return re.search(pattern, text, re.I) is not None


_BYE = r"\b(good ?bye|bye|have a (nice|great|good) (day|evening|one)|anything else)\b"
_FAIL = (r"\b(sorry|unfortunately|apologi[sz]e)\b.*\b(can ?not|can't|unable|not able|only help|couldn't|"
         r"could not)\b|\b(i can only help|i am unable|i'm unable|i cannot|i can't help)\b")
_SUGGEST = r"\b(would you like|do you want|shall i|should i|would you prefer|is that (ok|okay|fine|alright))\b"
_CLARIFY = r"\b(what do you mean|could you clarify|can you clarify|which (one|order|item|of)|more details)\b"
_REQUEST = (r"\b(can|could|would|may) (you|i) (please )?(give|provide|share|tell|confirm|have|get)\b|"
            r"\b(please (provide|give|share|tell|confirm|enter))\b|\bwhat is your\b|\byour [a-z ]{0,20}(id|number|"
            r"email|address|name)\b\?")
_DONT_KNOW = (r"\b(don't|do not|dont) (know|have|remember|recall)\b|\bnot sure\b|\bno idea\b|"
              r"\bcan't (remember|find)\b|\bforgot\b")
_AFFIRM = r"^\W*(yes|yeah|yep|sure|ok|okay|correct|right|that's right|please do|go ahead|confirm)\b"
_NEGATE = r"^\W*(no|nope|nah|not really|don't|do not)\b"
_USER_BYE = r"\b(thank(s| you)|bye|goodbye|that's all|that is all)\b"
_VALUE = r"#?\b[A-Z]*\d[\w-]*\b|[\w.+-]+@[\w-]+\.\w+"
_VAGUE = r"^\W*(hi|hello|hey)?\W*(i (have|'ve got) (a|an|some) (problem|issue|question)|i need help|help)\W*$"


def system_action(text: str, previous_role: str | None = None) -> str:
    """The action of an assistant message, given the role of the message before it."""
    text = str(text or "").strip()
    if _has(_BYE, text) and not _has(_REQUEST, text):
        return "system_bye"
    if previous_role == "api_output":
        return "response"
    if _has(_FAIL, text):
        return "response_fail"
    if "?" in text and _has(_SUGGEST, text):
        return "suggest"
    if _has(_CLARIFY, text):
        return "clarify"
    if "?" in text or _has(_REQUEST, text):
        return "request"
    return "response"


def user_action(text: str, *, first: bool) -> str:
    """The action of a user message (`first`: the conversation's first user message)."""
    text = str(text or "").strip()
    if first:
        if re.search(_VALUE, text):
            return "inform_intent_clear_add"
        if _has(_VAGUE, text) or len(text.split()) <= 2:
            return "inform_intent_vague"
        return "inform_intent_clear"
    if _has(_DONT_KNOW, text):
        return "fail_inform"
    if _has(_USER_BYE, text) and not re.search(_VALUE, text):
        return "user_bye"
    if _has(_AFFIRM, text):
        return "affirm"
    if _has(_NEGATE, text):
        return "negate"
    return "inform"


def label_turns(messages: list[dict[str, Any]]) -> list[str | None]:
    """One action per message (None for api_output and unknown roles)."""
    out: list[str | None] = []
    previous: str | None = None
    seen_user = False
    for m in messages or []:
        role = m.get("role")
        content = m.get("content", "")
        if role == "api":
            out.append("call")
        elif role == "assistant":
            out.append(system_action(content if isinstance(content, str) else str(content), previous))
        elif role == "user":
            out.append(user_action(content if isinstance(content, str) else str(content), first=not seen_user))
            seen_user = True
        else:
            out.append(None)
        previous = role
    return out


def answer_action(context: list[dict[str, Any]], answer: dict[str, Any]) -> str:
    """The action of an answer (expected, or an agent's parsed answer) after `context`:
    ``call``, a system action for a reply, or ``invalid`` for an unreadable answer."""
    kind = (answer or {}).get("type")
    if kind == "api_call":
        return "call"
    if kind != "reply":
        return "invalid"
    previous = (context or [{}])[-1].get("role") if context else None
    return system_action(str(answer.get("content", "")), previous)

"""Outcome consistency of generated conversations: the schema rule, then (optionally) an LLM.

Called from the conversations stage of a generation job for conversations realised along a path.
The rule (:mod:`generation.pipeline.consistency`) flags an api_output that contradicts the branch
taken next wherever the output schema decides. When the job's config says
``"outcome_check": "llm"`` (off by default), the calls the rule could not decide are sent to the
model with the versioned prompt OC.1; the call goes through the job's LLM client, so it is recorded,
cached and costed like every other call. Findings are warnings on the conversation
(``CV-OUTCOME`` / ``CV-OUTCOME-LLM``), which the review page shows to annotators.
"""
from __future__ import annotations

import json
from typing import Any, Callable

from generation import prompts
from generation.pipeline.apis import ApiSpec, api_to_dict
from generation.pipeline.consistency import ApiTurn, outcome_violations
from generation.pipeline.validate import Violation

TEMPLATE = "OC.1"
LlmCall = Callable[[str, str, str, list[dict], bool], str]  # Context.llm(stage, template, key, messages, json)


def describe_calls(turns: list[ApiTurn]) -> str:
    blocks = []
    for i, t in enumerate(turns, 1):
        spec = api_to_dict(t.api) if t.api else {}
        blocks.append(f"Call {i}: {t.call}\nAPI: {json.dumps(spec, ensure_ascii=False)}\n"
                      f"Output: {json.dumps(t.output, ensure_ascii=False)}\nBranch taken next: {t.outcome}")
    return "\n\n".join(blocks)


def parse_findings(reply: str, turns: list[ApiTurn]) -> list[Violation]:
    """Warnings for the calls the model judged inconsistent; an unreadable reply is one warning."""
    try:
        data = json.loads(reply)
        items = data.get("findings") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise ValueError("no findings list")
    except (ValueError, TypeError) as exc:
        return [Violation("CV-OUTCOME-LLM", "", f"the outcome check's reply could not be read ({exc})", "warning")]
    out = []
    for item in items:
        if not isinstance(item, dict) or item.get("consistent") is not False:
            continue
        n = item.get("call")
        if isinstance(n, int) and 1 <= n <= len(turns):
            t = turns[n - 1]
            out.append(Violation("CV-OUTCOME-LLM", f"message {t.position + 2}",
                                 f"the LLM check finds the output of {t.api.name if t.api else t.call} inconsistent "
                                 f"with the branch {t.outcome!r}: {str(item.get('reason', ''))[:300]}", "warning"))
    return out


def outcome_warnings(llm: LlmCall | None, config: dict[str, Any], key: str, g: Any, path: list[Any],
                     messages: list[dict], specs: list[ApiSpec]) -> list[Violation]:
    """The rule's findings, plus the LLM check's for undecided calls when the config enables it."""
    found, undecided = outcome_violations(g, path, messages, specs)
    if undecided and llm is not None and config.get("outcome_check") == "llm":
        chat = prompts.render(TEMPLATE, calls=describe_calls(undecided))
        reply = llm("conversations", TEMPLATE, f"{key}:outcome", chat, True)
        found += parse_findings(reply, undecided)
    return found

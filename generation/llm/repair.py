"""Repair instead of discard: re-ask in the same conversation with the validators' findings.

`ask` sends the stage's prompt; `check(reply)` returns the findings (rule id, message) that the
reply fails — parsing and the stage's validators — or [] when it passes. A failing reply is
marked `invalid` with its rule ids, then the conversation continues with that reply as the
assistant turn and a user turn listing the findings, up to LLM_REPAIR_ATTEMPTS times. A reply
that passes is marked `validated`, which is what lets the response cache serve it later:
nothing that failed is ever served from the cache. Transport errors keep their own retry budget
inside `chat` (LLM_MAX_RETRIES per turn).

When the repairs are spent, the item is started once more from a fresh conversation (the original
prompt, a new sample: its rows carry `resample=1`, which is also part of the cache key) with the
same repair budget, LLM_RESAMPLES times, before it is discarded: a conversation that went wrong
twice is often stuck on its own mistake, and a new sample is not. A stage asked at temperature 0
would get the same sample again from most endpoints, so a fresh conversation is asked at
LLM_RESAMPLE_TEMPERATURE at least.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from django.conf import settings

from generation.llm.client import chat

Finding = tuple[str, str]  # (rule id, message)

REPAIR_TURN = (
    "Your answer did not pass the automatic checks:\n{findings}\n\n"
    "Answer again with the whole corrected output, in exactly the format asked for above, and nothing else."
)
_MAX_FINDINGS = 10


@dataclass
class Answer:
    content: str
    passed: bool
    repairs: int = 0  # repair turns used (0 = the first reply was taken)
    resamples: int = 0  # fresh conversations started after the repairs were spent
    # Findings of every failed attempt, in order: [[(rule, message), ...], ...].
    history: list[list[Finding]] = field(default_factory=list)

    @property
    def repaired(self) -> bool:
        return self.passed and self.repairs > 0 and not self.resamples

    @property
    def resampled(self) -> bool:
        return self.passed and self.resamples > 0

    def history_text(self) -> str:
        return "; ".join(f"attempt {i + 1}: " + ", ".join(f"{rule} ({msg})" for rule, msg in found[:3])
                         for i, found in enumerate(self.history))


def repair_message(findings: list[Finding]) -> str:
    lines = "\n".join(f"- {rule}: {message}" for rule, message in findings[:_MAX_FINDINGS])
    return REPAIR_TURN.format(findings=lines)


def ask(*, messages: list[dict], check: Callable[[str], list[Finding]], attempts: int | None = None,
        resamples: int | None = None, **chat_kwargs: Any) -> Answer:
    """Chat, check, and repair up to `attempts` times (default LLM_REPAIR_ATTEMPTS); then, when it
    still fails, start afresh up to `resamples` times (default LLM_RESAMPLES) with the same budget.

    Raises what `chat` raises (LLMFailed, LLMUnavailable, LLMStopped) when a turn fails for
    transport reasons or the job stopped.
    """
    attempts = settings.LLM_REPAIR_ATTEMPTS if attempts is None else attempts
    resamples = settings.LLM_RESAMPLES if resamples is None else resamples
    history: list[list[Finding]] = []
    content = ""
    for resample in range(resamples + 1):
        conversation = list(messages)
        kwargs = dict(chat_kwargs)
        if resample:
            kwargs["temperature"] = max(float(kwargs.get("temperature") or 0.0), settings.LLM_RESAMPLE_TEMPERATURE)
        for turn in range(attempts + 1):
            # The check runs inside chat, so the row is completed as ok + validated or invalid + rules at once.
            result = chat(messages=conversation, repair=turn, resample=resample, check=check, **kwargs)
            content = result.content or ""
            findings = result.findings
            if not findings:
                return Answer(content=content, passed=True, repairs=turn, resamples=resample, history=history)
            history.append(findings)
            conversation = conversation + [{"role": "assistant", "content": content},
                                           {"role": "user", "content": repair_message(findings)}]
    return Answer(content=content, passed=False, repairs=attempts, resamples=resamples, history=history)

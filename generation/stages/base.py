"""Shared pieces of the stages: item results, keys, reply parsing, seeds and the LLM context."""
from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

from django.conf import settings
from django.db import models as dj

from generation import llm, prompts
from generation.models import Api, GenerationJob, Stage
from generation.pipeline.apis import ApiSpec, ParamSpec, api_to_dict
from generation.pipeline.validate import errors
from generation.stages.schemas import schema_for

STAGE_ORDER: list[str] = [s.value for s in Stage]
INTENT_BATCH = 10
MIN_PROCEDURE_CHARS = 40

# Default temperatures: variety where the paper wants diversity, determinism where it parses.
DEFAULT_TEMPERATURES = {
    "intents": 1.0, "procedures": 0.7, "apis": 0.0, "flowgraph": 0.0,
    "conversation_graph": 0.0, "conversations": 0.7,
}
JSON_FORMAT = {"type": "json_object"}


@dataclass
class Output:
    model: type[dj.Model]
    key: str
    fields: dict[str, Any]


@dataclass
class DiscardSpec:
    key: str
    reason: str
    detail: str = ""
    example: str = ""


@dataclass
class ItemResult:
    outcome: str = "passed"  # passed | discarded | failed | cancelled
    outputs: list[Output] = field(default_factory=list)
    discards: list[DiscardSpec] = field(default_factory=list)
    generated: int = 0
    passed: int = 0
    failed: int = 0
    repaired: int = 0
    # Units that passed only in a fresh conversation started after the repairs were spent.
    resampled: int = 0
    # Why the job must stop now (its cost limit was reached): the item is not counted, the job fails.
    stopped: str = ""
    # Shortfalls that are not discards, by reason (e.g. fewer distinct paths than asked).
    notes: dict[str, int] = field(default_factory=dict)

    @property
    def discarded(self) -> int:
        return len(self.discards) - self.failed

    def discard(self, key: str, reason: str, detail: str = "", example: Any = "") -> "ItemResult":
        text = example if isinstance(example, str) else json.dumps(example, ensure_ascii=False)
        self.discards.append(DiscardSpec(key, reason[:100], detail[:4000], (text or "")[:4000]))
        return self


def needs_llm(stage: str, config: dict) -> bool:
    if stage in ("intents", "procedures", "apis", "flowgraph"):
        return True
    if stage == "conversation_graph":
        return config.get("conversation_graph") == "llm"
    if stage == "conversations":
        return config.get("conversations") in ("llm", "procedure")
    return False


def stage_skipped_by_config(stage: str, config: dict) -> bool:
    """Stages that this configuration does not run at all."""
    if config.get("conversations") == "procedure" and stage in ("flowgraph", "conversation_graph", "noise", "paths"):
        return True
    if stage == "noise" and not config.get("noise"):
        return True
    return False


# --------------------------------------------------------------------------- helpers


def item_key(stage: str, index: int, parent: Any) -> str:
    return f"{stage}:{index}:{parent}"


def split_key(key: str) -> tuple[str, int, str]:
    stage, index, parent = key.split(":", 2)
    return stage, int(index), parent


def api_specs(procedure_id: int) -> list[ApiSpec]:
    out = []
    for a in Api.objects.filter(procedure_id=procedure_id).order_by("id"):
        out.append(ApiSpec(
            name=a.name, description=a.description,
            params=[ParamSpec.from_dict({"name": "", **p}) for p in a.parameters],  # i13: enum/default/properties
            output_name=a.output_name, output_type=a.output_type,
            outputs=[ParamSpec.from_dict({"name": "", **o}) for o in a.outputs],  # i13: declared output fields
        ))
    return out


def apis_json(specs: list[ApiSpec]) -> str:
    return json.dumps([api_to_dict(a) for a in specs], ensure_ascii=False)


_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def parse_json_reply(text: str | None) -> Any:
    """JSON from a model reply, tolerating code fences and prose around one object or list."""
    if not text or not text.strip():
        raise ValueError("empty reply")
    stripped = _FENCE.sub("", text.strip())
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as first:
        for open_, close in (("{", "}"), ("[", "]")):
            a, b = stripped.find(open_), stripped.rfind(close)
            if 0 <= a < b:
                try:
                    return json.loads(stripped[a:b + 1])
                except json.JSONDecodeError:
                    pass
        raise ValueError(f"invalid JSON at line {first.lineno} column {first.colno}: {first.msg}") from None


def list_in(data: Any, *names: str) -> list | None:
    """The list a reply carries: itself, under one of `names`, or the only list value of an object."""
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for name in names:
            if isinstance(data.get(name), list):
                return data[name]
        lists = [v for v in data.values() if isinstance(v, list)]
        if len(lists) == 1:
            return lists[0]
    return None


def content_seed(seed: int, *parts: Any) -> int:
    """A seed from the job seed and the item's content, not from row ids or task order.

    Rerunning the same job therefore samples the same paths and realises the same conversations
    (so a rerun's LLM prompts are identical and hit the cache), whatever order workers ran in.
    """
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return seed * 1_000_003 + zlib.crc32(text.encode()) % 1_000_003


def violations_json(violations) -> list[dict]:
    return [{"rule": v.rule, "where": v.where, "message": v.message, "severity": v.severity} for v in violations]


def discard_for_violations(result: ItemResult, key: str, violations, example: Any) -> ItemResult:
    errs = errors(violations)
    detail = "; ".join(f"{v.rule} at {v.where}: {v.message}" for v in errs[:10])
    return result.discard(key, errs[0].rule, detail, example)


class Context:
    """What a stage function needs from the job, without holding the row across LLM calls."""

    def __init__(self, job: GenerationJob) -> None:
        self.job = job
        self.config = job.config or {}
        self.seed = int(self.config.get("seed", 0))

    def temperature(self, stage: str) -> float:
        temps = {**DEFAULT_TEMPERATURES, **(self.config.get("temperatures") or {})}
        return float(temps.get(stage, 0.0))

    def with_feedback(self, messages: list[dict], template_id: str) -> tuple[list[dict], str]:
        """The prompt and its version; a feedback job (#15) appends the reviewers' reasons to avoid
        and marks the version (e.g. ``v1+feedback``) on every call."""
        version = prompts.version_of(template_id)
        if self.config.get("feedback"):
            from generation.feedback import feedback_version, with_feedback
            messages = with_feedback(messages, self.config["feedback"]["text"])
            version = feedback_version(version, self.config)
        if self.config.get("instructions"):  # the job's extra instructions (the project's default)
            from generation.feedback import with_feedback
            messages = with_feedback(messages, f"Additional instructions:\n{self.config['instructions']}")
            version = f"{version}+instructions"
        return messages, version

    def _ask(self, stage: str, template_id: str, key: str, messages: list[dict], json_mode: bool,
             check: Callable[[str], list[tuple[str, str]]], **extra: Any) -> llm.Answer:
        """llm.ask with this job's model, temperature, feedback, prompt version and cache setting."""
        messages, version = self.with_feedback(messages, template_id)
        if self.config.get("repairs") is not None:  # a job's own repair budget (the paper's: none)
            extra.setdefault("attempts", int(self.config["repairs"]))
            if not int(self.config["repairs"]):
                extra.setdefault("resamples", 0)  # the paper discards a failing reply: no fresh conversation either
        return llm.ask(
            messages=messages, check=check, stage=stage, model=(self.config.get("models") or {}).get(stage) or None,
            temperature=self.temperature(stage), response_format=JSON_FORMAT if json_mode else None,
            schema=schema_for(template_id) if json_mode else None, batch=bool(self.config.get("batch")),
            job=self.job.pk, key=key, template=template_id, template_version=version,
            use_cache=bool(settings.LLM_CACHE and self.config.get("cache", True)), **extra,
        )

    def llm(self, stage: str, template_id: str, key: str, messages: list[dict], json_mode: bool) -> str:
        """One call with no validator and no repair turn, for auxiliary checks (the outcome check, #13)."""
        return self._ask(stage, template_id, key, messages, json_mode, lambda reply: [], attempts=0,
                         resamples=0).content

    def ask(self, stage: str, template_id: str, key: str, messages: list[dict], json_mode: bool,
            interpret: Callable[[str], ItemResult], sample: int = 0) -> ItemResult:
        """Ask the LLM and interpret the reply; a reply with discards is repaired (llm.ask) first.

        `interpret(reply)` turns a reply into the item's result without side effects; its discards
        are the findings sent back in the repair turn. The result of the last reply is returned,
        with `repaired` set when it passed only after a repair (`resampled` when only in a fresh
        conversation after the repairs were spent), and every attempt's reasons in the
        discard details when it never passed.
        """
        final: dict[str, ItemResult] = {}

        def check(reply: str) -> list[tuple[str, str]]:
            final["result"] = interpret(reply)
            return [(d.reason, d.detail or d.reason) for d in final["result"].discards]

        answer = self._ask(stage, template_id, key, messages, json_mode, check, sample=sample)
        result = final["result"]
        if answer.repaired:
            result.repaired = result.passed
        if answer.resampled:
            result.resampled = result.passed
        if answer.history and not answer.passed and len(answer.history) > 1:
            every = answer.history_text()
            for d in result.discards:
                d.detail = f"{d.detail} [{every}]"[:4000]
        return result

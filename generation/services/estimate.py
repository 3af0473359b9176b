"""What a job is expected to cost before it runs: LLM calls per stage × tokens per call × price.

Calls per stage follow the plan (stages/planning.py) on the assumption that every unit passes:
one A.1 call per INTENT_BATCH intents, one call per procedure for A.2, A.3 and A.4 (and A.5 when
the conversation graph is asked of the LLM), one per path for A.6 / A.7. Tokens per call are the
average of the last validated replies of that stage and model in this database, or a default when
there are none yet. Retries, repairs and resamples come on top; the page says so.
"""
from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Avg

from generation.llm.config import cost_of
from generation.models import LLMCall, LLMOutcome
from generation.stages import INTENT_BATCH, STAGE_ORDER, needs_llm, stage_skipped_by_config

# (prompt, completion) tokens of one call when the database has no reply of that stage yet.
DEFAULT_TOKENS: dict[str, tuple[int, int]] = {
    "intents": (700, 900), "procedures": (600, 500), "apis": (900, 500), "flowgraph": (1400, 600),
    "conversation_graph": (1500, 700), "conversations": (1500, 700),
}
_HISTORY = 200  # replies averaged per stage and model


def _tokens_per_call(stage: str, model: str) -> tuple[int, int]:
    ids = list(LLMCall.objects.filter(stage=stage, model=model, outcome=LLMOutcome.OK, tokens_estimated=False)
               .order_by("-id").values_list("id", flat=True)[:_HISTORY])
    if ids:
        avg = LLMCall.objects.filter(pk__in=ids).aggregate(p=Avg("prompt_tokens"), c=Avg("completion_tokens"))
        return round(avg["p"] or 0), round(avg["c"] or 0)
    return DEFAULT_TOKENS[stage]


def calls_per_stage(cfg: dict[str, Any], inputs: int | None = None) -> dict[str, int]:
    """LLM calls per LLM stage if every unit passes. `inputs`: how many rows the job starts from
    (imported or existing, at the level before cfg['start']); None when it generates intents."""
    start = cfg.get("start", "intents")
    per_intent = int(cfg.get("procedures_per_intent") or 1)
    paths = int(cfg.get("paths") or 1)
    units = 0  # units reaching the current stage
    out: dict[str, int] = {}
    for stage in STAGE_ORDER[STAGE_ORDER.index(start):]:
        if stage == "intents":
            n = int(cfg.get("intents") or 0)
            calls, units = math.ceil(n / INTENT_BATCH), n
        else:
            if stage == STAGE_ORDER[STAGE_ORDER.index(start)] and inputs is not None:
                units = inputs
            if stage == "procedures":
                units *= per_intent
            if stage == "conversations":
                units *= paths  # procedure mode (A.7) also makes `paths` conversations per procedure
            calls = units
        if needs_llm(stage, cfg) and not stage_skipped_by_config(stage, cfg):
            out[stage] = calls
    return out


def job_estimate(cfg: dict[str, Any], inputs: int | None = None) -> dict[str, Any]:
    """{"calls": n, "cost_usd": float, "stages": [{"stage", "calls", "cost_usd"}]}, no retries or repairs."""
    models = cfg.get("models") or {}
    rows = []
    for stage, calls in calls_per_stage(cfg, inputs).items():
        model = models.get(stage) or settings.LLM_STAGE_MODELS.get(stage, "")
        prompt, completion = _tokens_per_call(stage, model)
        cost = cost_of(model, prompt, completion) * calls
        rows.append({"stage": stage, "calls": calls, "model": model, "cost_usd": float(round(cost, 4))})
    total = sum((Decimal(str(r["cost_usd"])) for r in rows), Decimal(0))
    return {"calls": sum(r["calls"] for r in rows), "cost_usd": float(round(total, 4)), "stages": rows}

"""Job settings: defaults, bounds and the checks every launch path (form, API, CLI) goes through."""
from __future__ import annotations

import math
from typing import Any

from generation import multi_api
from generation.pipeline.sampling import SAMPLERS
from generation.stages import STAGE_ORDER, needs_llm


DEFAULT_CONFIG: dict[str, Any] = {
    "intents": 0,
    "procedures_per_intent": 1,
    "paths": 2,
    "sampler": "algorithm1",
    "noise": 0.0,
    "seed": 0,
    "conversation_graph": "deterministic",
    "conversations": "offline",
    "models": {},
    "start": "intents",
}


# Seeds are 31-bit: every sampler and random generator accepts them, and so does a Postgres integer.
SEED_MAX = 2**31 - 1


class JobConfigError(ValueError):
    pass


# --------------------------------------------------------------------------- configuration


# The bounds every launch path shares (form, REST API, `generate`): name → (low, high).
BOUNDS: dict[str, tuple[int | float, int | float]] = {
    "intents": (0, 1000),
    "procedures_per_intent": (1, 20),
    "paths": (1, 100),
    "noise": (0.0, 1.0),
    "seed": (0, SEED_MAX),
    "cost_limit": (0.01, 1_000_000.0),
}
TEMPERATURE_MAX = 2.0
LLM_STAGE_NAMES = ("intents", "procedures", "apis", "flowgraph", "conversation_graph", "conversations")


def _number(name: str, value: Any, kind: type) -> int | float:
    """`value` as an int or a finite float within BOUNDS[name], or a JobConfigError naming the field."""
    low, high = BOUNDS[name]
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        raise JobConfigError(f"{name} must be a number between {low} and {high}")
    try:
        number = float(value) if kind is float else int(str(value).strip()) if isinstance(value, str) else value
        if kind is int and isinstance(number, float):
            if not number.is_integer():
                raise ValueError
            number = int(number)
        number = kind(number)
    except (TypeError, ValueError, OverflowError):
        raise JobConfigError(f"{name} must be a whole number between {low} and {high}" if kind is int
                             else f"{name} must be a number between {low} and {high}") from None
    if kind is float and not math.isfinite(number):
        raise JobConfigError(f"{name} must be a number between {low} and {high}")
    if not low <= number <= high:
        raise JobConfigError(f"{name} must be between {low} and {high} (got {value if len(str(value)) < 40 else str(value)[:40] + '…'})")
    return number


def job_config_normalise(config: dict[str, Any]) -> dict[str, Any]:
    """Defaults filled in and every field checked; raises JobConfigError naming the bad field."""
    if not isinstance(config, dict):
        raise JobConfigError("the job settings must be an object")
    cfg = {**DEFAULT_CONFIG, **{k: v for k, v in config.items() if v is not None}}
    for name in ("intents", "procedures_per_intent", "paths", "seed"):
        cfg[name] = _number(name, cfg[name], int)
    cfg["noise"] = _number("noise", cfg["noise"], float)
    if cfg.get("cost_limit") is not None:  # dollars; reaching it fails the job and keeps what was made
        cfg["cost_limit"] = round(_number("cost_limit", cfg["cost_limit"], float), 4)
    temps = cfg.get("temperatures") or {}
    if not isinstance(temps, dict) or any(k not in LLM_STAGE_NAMES for k in temps):
        raise JobConfigError(f"temperatures must map stages ({', '.join(LLM_STAGE_NAMES)}) to numbers")
    clean: dict[str, float] = {}
    for stage, value in temps.items():
        try:
            t = float(value)
        except (TypeError, ValueError, OverflowError):
            t = float("nan")
        if isinstance(value, bool) or not math.isfinite(t) or not 0.0 <= t <= TEMPERATURE_MAX:
            raise JobConfigError(f"temperature of {stage} must be between 0 and {TEMPERATURE_MAX}")
        clean[stage] = t
    cfg["temperatures"] = clean
    if not isinstance(cfg.get("cache", True), bool):
        raise JobConfigError("cache must be true or false")
    cfg["cache"] = cfg.get("cache", True)
    if not isinstance(cfg.get("batch", False), bool):
        raise JobConfigError("batch must be true or false")
    cfg["batch"] = cfg.get("batch", False)
    instructions = cfg.pop("instructions", "") or ""
    if not isinstance(instructions, str) or len(instructions) > 4000:
        raise JobConfigError("instructions must be a text of at most 4000 characters")
    if instructions.strip():  # extra instructions appended to every LLM prompt (the project's default)
        cfg["instructions"] = instructions.strip()
    # The paper's configuration (bench/generation_economy.py): repeated walks kept, no repair turns.
    if not isinstance(cfg.get("dedup", True), bool):
        raise JobConfigError("dedup must be true or false")
    repairs = cfg.get("repairs")
    if repairs is not None and (isinstance(repairs, bool) or not isinstance(repairs, int) or not 0 <= repairs <= 5):
        raise JobConfigError("repairs must be a whole number between 0 and 5")
    models = cfg.get("models") or {}
    if not isinstance(models, dict) or not all(isinstance(v, str) and len(v) <= 200 for v in models.values()):
        raise JobConfigError("models must map stages to model names (at most 200 characters)")
    for name in ("sampler", "conversation_graph", "conversations", "start"):
        if not isinstance(cfg[name], str):
            raise JobConfigError(f"{name} must be text")
    if cfg["sampler"] not in SAMPLERS:
        raise JobConfigError(f"sampler must be one of {', '.join(SAMPLERS)}")
    if cfg["conversation_graph"] not in ("llm", "deterministic"):
        raise JobConfigError("conversation graph mode must be llm or deterministic")
    if cfg["conversations"] not in ("llm", "offline", "procedure"):
        raise JobConfigError("conversation mode must be llm, offline or procedure")
    if cfg["start"] not in STAGE_ORDER:
        raise JobConfigError(f"unknown start stage {cfg['start']!r}")
    if cfg["start"] == "intents" and cfg["intents"] == 0:
        raise JobConfigError("give a number of intents to generate, or import items to start from")
    return multi_api.config_normalise(cfg)  # #17: check and freeze the API-chain setting


def llm_stages(cfg: dict[str, Any]) -> list[str]:
    start = STAGE_ORDER.index(cfg["start"])
    return [s for s in STAGE_ORDER[start:] if needs_llm(s, cfg)]


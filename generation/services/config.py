"""Job settings: defaults, bounds and the checks every launch path (form, API, CLI) goes through."""
from __future__ import annotations

from typing import Any

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


class JobConfigError(ValueError):
    pass


# --------------------------------------------------------------------------- configuration


def job_config_normalise(config: dict[str, Any]) -> dict[str, Any]:
    cfg = {**DEFAULT_CONFIG, **{k: v for k, v in config.items() if v is not None}}
    try:
        cfg["intents"] = int(cfg["intents"])
        cfg["procedures_per_intent"] = int(cfg["procedures_per_intent"])
        cfg["paths"] = int(cfg["paths"])
        cfg["noise"] = float(cfg["noise"])
        cfg["seed"] = int(cfg["seed"])
    except (TypeError, ValueError) as exc:
        raise JobConfigError(f"bad number in the job settings: {exc}") from None
    if cfg["intents"] < 0 or cfg["intents"] > 1000:
        raise JobConfigError("intents must be between 0 and 1000")
    if not 1 <= cfg["procedures_per_intent"] <= 20:
        raise JobConfigError("procedures per intent must be between 1 and 20")
    if not 1 <= cfg["paths"] <= 100:
        raise JobConfigError("paths per graph must be between 1 and 100")
    if not 0.0 <= cfg["noise"] <= 1.0:
        raise JobConfigError("noise must be between 0 and 1")
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
    return cfg


def llm_stages(cfg: dict[str, Any]) -> list[str]:
    start = STAGE_ORDER.index(cfg["start"])
    return [s for s in STAGE_ORDER[start:] if needs_llm(s, cfg)]


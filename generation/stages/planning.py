"""Planning: the work-item keys of a stage, read from the previous stage's outputs in pk order."""
from __future__ import annotations

import math

from django.db import models as dj

from generation.models import Api, Conversation, ConversationGraph, Flowgraph, GenerationJob, Intent, Procedure, SampledPath
from generation.stages.base import INTENT_BATCH, item_key, stage_skipped_by_config


def _inputs(job: GenerationJob, model: type[dj.Model], stage_of_model: str, **filters) -> dj.QuerySet:
    override = (job.config.get("input_ids") or {}).get(stage_of_model)
    if override is not None:
        return model.objects.filter(pk__in=override).order_by("pk")
    return model.objects.filter(job=job, **filters).order_by("pk")


def procedures_with_apis(job: GenerationJob) -> dj.QuerySet:
    override = (job.config.get("input_ids") or {}).get("apis")
    if override is not None:
        return Procedure.objects.filter(pk__in=override).order_by("pk")
    return Procedure.objects.filter(pk__in=Api.objects.filter(job=job).values("procedure_id")).order_by("pk")


def conversation_graphs_for_paths(job: GenerationJob) -> dj.QuerySet:
    if job.config.get("noise"):
        return _inputs(job, ConversationGraph, "noise", key__startswith="noise:")
    return _inputs(job, ConversationGraph, "conversation_graph", key__startswith="conversation_graph:")


def plan(job: GenerationJob, stage: str) -> list[str]:
    """The work-item keys of `stage`, from the previous stage's outputs (stable for a job)."""
    cfg = job.config
    if stage_skipped_by_config(stage, cfg):
        return []
    if stage == "intents":
        n = int(cfg.get("intents") or 0)
        return [item_key(stage, j, "batch") for j in range(math.ceil(n / INTENT_BATCH))]
    if stage == "procedures":
        k = int(cfg.get("procedures_per_intent") or 1)
        intents = _inputs(job, Intent, "intents").values_list("pk", flat=True)
        return [item_key(stage, i * k + v, pk) for i, pk in enumerate(intents) for v in range(k)]
    if stage == "apis":
        parents = _inputs(job, Procedure, "procedures").values_list("pk", flat=True)
    elif stage == "flowgraph":
        parents = procedures_with_apis(job).values_list("pk", flat=True)
    elif stage == "conversation_graph":
        parents = _inputs(job, Flowgraph, "flowgraph").values_list("pk", flat=True)
    elif stage == "noise":
        parents = _inputs(job, ConversationGraph, "conversation_graph",
                          key__startswith="conversation_graph:").values_list("pk", flat=True)
    elif stage == "paths":
        parents = conversation_graphs_for_paths(job).values_list("pk", flat=True)
    elif stage == "conversations":
        if cfg.get("conversations") == "procedure":
            m = int(cfg.get("paths") or 1)
            procs = procedures_with_apis(job).values_list("pk", flat=True)
            return [item_key(stage, i * m + v, f"p{pk}") for i, pk in enumerate(procs) for v in range(m)]
        parents = _inputs(job, SampledPath, "paths").values_list("pk", flat=True)
    elif stage == "tests":
        parents = _inputs(job, Conversation, "conversations").values_list("pk", flat=True)
    else:
        raise ValueError(f"unknown stage {stage!r}")
    return [item_key(stage, i, pk) for i, pk in enumerate(parents)]


"""What each pipeline stage does for one work item: plan the items, then process one of them.

A work item is keyed `"<stage>:<index>:<parent>"` (parent = the pk of the row it starts from,
or `p<pk>` for A.7 items). Planning reads the previous stage's outputs in pk order, so the same
job plans the same keys every time. Processing calls the LLM or the pure pipeline *outside* any
transaction and returns an `ItemResult`: the rows to write (keyed, written with
`update_or_create`), the discards with their reasons, and the Table 1 counts. `services.jobs.item_run`
writes the result and marks the item done in one transaction.
"""
from __future__ import annotations

import logging
from typing import Callable

from generation import llm
from generation.models import GenerationJob
from generation.stages.authoring import run_apis, run_conversation_graph, run_flowgraph, run_intents, run_procedures
from generation.stages.base import (
    DEFAULT_TEMPERATURES,
    INTENT_BATCH,
    STAGE_ORDER,
    Context,
    DiscardSpec,
    ItemResult,
    Output,
    content_seed,
    item_key,
    list_in,
    needs_llm,
    parse_json_reply,
    split_key,
    stage_skipped_by_config,
    violations_json,
)
from generation.stages.derived import run_conversations, run_noise, run_paths, run_tests
from generation.stages.planning import plan

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_TEMPERATURES", "INTENT_BATCH", "RUNNERS", "STAGE_ORDER", "Context", "DiscardSpec", "ItemResult", "Output",
    "content_seed", "item_key", "list_in", "needs_llm", "parse_json_reply", "plan", "process", "split_key",
    "stage_skipped_by_config", "violations_json",
]


RUNNERS: dict[str, Callable[[Context, str, int, str], ItemResult]] = {
    "intents": run_intents,
    "procedures": run_procedures,
    "apis": run_apis,
    "flowgraph": run_flowgraph,
    "conversation_graph": run_conversation_graph,
    "noise": run_noise,
    "paths": run_paths,
    "conversations": run_conversations,
    "tests": run_tests,
}


def process(job: GenerationJob, key: str) -> ItemResult:
    """Run one work item. LLM failures become a recorded discard, never an exception."""
    stage, index, parent = split_key(key)
    try:
        return RUNNERS[stage](Context(job), key, index, parent)
    except llm.LLMDeferred:
        raise  # batch mode: the item runs again when its batch is back (services/items.py)
    except llm.LLMUnavailable as exc:
        return ItemResult(outcome="failed", generated=1, failed=1).discard(key, "llm_unavailable", str(exc))
    except llm.LLMFailed as exc:
        return ItemResult(outcome="failed", generated=1, failed=1).discard(key, "llm_failed", str(exc))
    except Exception as exc:  # noqa: BLE001 - a bug in one item must not stall the whole job
        logger.exception("generation item %s failed", key)
        return ItemResult(outcome="failed", generated=1, failed=1).discard(
            key, "stage_error", f"{type(exc).__name__}: {exc}")

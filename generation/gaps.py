"""Gap filling (i15): a generation job that samples the fewest paths covering exactly the edges no
accepted conversation covers, realises them as conversations and extracts tests (which the review
queue then picks up).

The job starts at the paths stage on existing, accepted conversation graphs. Its paths are planned
here, when it is created (the target-edge coverage sampler), and written by the paths stage as
they are, so a rerun of the stage writes the same rows. Each planned path gets a GapFill row: the
edges it fills and which attempt at them it is. An edge that ``retry_limit`` fills have already
targeted is left alone (it is reported, with its attempts, instead).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from generation import llm
from generation.coverage import coverage_of
from generation.models import (
    ConversationGraph, CurationStatus, GapFill, GenerationJob, Origin, SampledPath, StageProgress, StageState,
)
from generation.pipeline.formats import graph_from_json
from generation.pipeline.sampling import SamplingError, cover_targets
from generation.stages import STAGE_ORDER, Context, ItemResult, Output

CONVERSATION_MODES = ("offline", "llm")


def retry_limit() -> int:
    """How many gap-filling attempts one uncovered edge gets (settings.GAP_FILL_RETRY_LIMIT, default 3)."""
    return settings.GAP_FILL_RETRY_LIMIT


class NothingToFill(Exception):
    """No accepted graph in scope has an uncovered edge left to try."""


@dataclass
class GraphPlan:
    graph: ConversationGraph
    paths: list[list[str]] = field(default_factory=list)
    fills: list[list[tuple[str, str]]] = field(default_factory=list)  # per path: the gaps it fills
    attempts: list[int] = field(default_factory=list)
    exhausted: list[tuple[str, str]] = field(default_factory=list)  # tried retry_limit times already
    uncoverable: list[tuple[str, str]] = field(default_factory=list)
    skipped: str = ""  # why the graph gets no paths at all

    def as_dict(self) -> dict[str, Any]:
        return {"graph": self.graph.pk, "paths": len(self.paths), "skipped": self.skipped,
                "fills": [[list(e) for e in f] for f in self.fills], "attempts": self.attempts,
                "exhausted": [list(e) for e in self.exhausted], "uncoverable": [list(e) for e in self.uncoverable]}


def previous_attempts(graph: ConversationGraph) -> Counter:
    """How many gap-filling paths have targeted each edge of the graph so far."""
    tries: Counter = Counter()
    for edges in GapFill.objects.filter(conversation_graph=graph).values_list("edges", flat=True):
        for u, v in edges:
            tries[(str(u), str(v))] += 1
    return tries


def gap_plan(graphs: Iterable[ConversationGraph], *, max_loops: int = 1, limit: int | None = None
             ) -> list[GraphPlan]:
    """For each graph: the fewest paths within the loop bound covering its uncovered edges that
    still have attempts left. Graphs that are not accepted get no paths (and say why)."""
    limit = retry_limit() if limit is None else limit
    plans = []
    for cg, cov, err in coverage_of(graphs):
        plan = GraphPlan(graph=cg)
        plans.append(plan)
        if err:
            plan.skipped = err
            continue
        if cg.status != CurationStatus.ACCEPTED:
            plan.skipped = f"the graph is {cg.status}, not accepted"
            continue
        tries = previous_attempts(cg)
        gaps = [(str(u), str(v)) for u, v in cov.uncovered_edges]
        plan.exhausted = [e for e in gaps if tries[e] >= limit]
        targets = [e for e in gaps if tries[e] < limit]
        if not targets:
            plan.skipped = "no gaps" if not gaps else f"every gap was tried {limit} times"
            continue
        g = graph_from_json(cg.data)
        try:
            cover = cover_targets(g, targets, max_loops=max_loops)
        except SamplingError as exc:
            plan.skipped = str(exc)
            continue
        plan.uncoverable = [(str(u), str(v)) for u, v in cover.uncoverable]
        wanted = set(targets)
        for p in cover.paths:
            p = [str(n) for n in p]
            fills = list(dict.fromkeys(e for e in zip(p, p[1:]) if e in wanted))
            plan.paths.append(p)
            plan.fills.append(fills)
            plan.attempts.append(1 + max(tries[e] for e in fills))
    return plans


@transaction.atomic
def gaps_fill(*, graphs: Iterable[ConversationGraph], conversations: str = "offline", created_by=None,
              name: str = "", enqueue: bool = True, max_loops: int = 1) -> tuple[GenerationJob, list[GraphPlan]]:
    """Create (and start after commit) the gap-filling job for ``graphs``; raises NothingToFill
    with the reason when there is nothing to do, JobConfigError for bad settings."""
    from generation.services import JobConfigError, job_config_normalise

    if conversations not in CONVERSATION_MODES:
        raise JobConfigError(f"conversation mode must be one of {', '.join(CONVERSATION_MODES)}")
    if conversations == "llm" and not llm.endpoint_configured():
        raise JobConfigError(f"{llm.NO_ENDPOINT_MESSAGE} Gap filling with LLM conversations needs it.")
    plans = gap_plan(graphs, max_loops=max_loops)
    todo = [p for p in plans if p.paths]
    if not todo:
        reasons = sorted({p.skipped for p in plans if p.skipped}) or ["no graphs in scope"]
        raise NothingToFill("nothing to fill: " + "; ".join(reasons))
    seed = 7919 * (GapFill.objects.count() + 1)  # a new attempt realises new conversation text
    cfg = job_config_normalise({
        "start": "paths", "intents": 0, "paths": max(1, min(100, max(len(p.paths) for p in todo))),
        "sampler": "coverage", "noise": 0.0, "seed": seed, "conversations": conversations,
        "conversation_graph": "deterministic", "input_ids": {"conversation_graph": [p.graph.pk for p in todo]},
        "gap_paths": {str(p.graph.pk): p.paths for p in todo}, "max_loops": max_loops,
    })
    job = GenerationJob.objects.create(name=(name or "Fill the gaps")[:200], config=cfg, created_by=created_by)
    now = timezone.now()
    StageProgress.objects.bulk_create([StageProgress(job=job, stage=s) for s in STAGE_ORDER])
    StageProgress.objects.filter(job=job, stage__in=STAGE_ORDER[:STAGE_ORDER.index("paths")]).update(
        state=StageState.SKIPPED, started_at=now, finished_at=now)
    StageProgress.objects.filter(job=job, stage="conversation_graph").update(
        state=StageState.DONE, imported=len(todo), generated=len(todo), passed=len(todo))
    GapFill.objects.bulk_create([
        GapFill(job=job, conversation_graph=p.graph, index=i, node_ids=path, edges=[list(e) for e in fills],
                attempt=attempt)
        for p in todo for i, (path, fills, attempt) in enumerate(zip(p.paths, p.fills, p.attempts))
    ])
    if enqueue:
        from generation.tasks import job_advance_task

        transaction.on_commit(lambda: job_advance_task.delay(job.pk))
    return job, plans


def run_gap_paths(ctx: Context, key: str, index: int, parent: str) -> ItemResult:
    """The paths stage of a gap-filling job: write the planned paths (idempotent by key)."""
    result = ItemResult()
    cg_id = int(parent)
    for i, node_ids in enumerate((ctx.config.get("gap_paths") or {}).get(str(cg_id), [])):
        result.generated += 1
        result.passed += 1
        result.outputs.append(Output(SampledPath, f"paths:{index}:{cg_id}:{i}", {
            "conversation_graph_id": cg_id, "node_ids": [str(n) for n in node_ids], "sampler": "gaps",
            "seed": ctx.seed, "index": i, "origin": Origin.DERIVED,
        }))
    return result


def gap_lineage(conversation) -> GapFill | None:
    """Which gap a conversation was generated to fill (None for conversations of ordinary jobs)."""
    path = conversation.path
    if path is None or path.job_id is None:
        return None
    return GapFill.objects.filter(job_id=path.job_id, conversation_graph_id=path.conversation_graph_id,
                                  index=path.index).first()


def format_plan(plans: list[GraphPlan]) -> str:
    lines = []
    for p in plans:
        if p.skipped:
            lines.append(f"graph {p.graph.pk}: {p.skipped}")
            continue
        gaps = sum(len(f) for f in p.fills)
        lines.append(f"graph {p.graph.pk}: {len(p.paths)} paths fill {gaps} uncovered edges"
                     + (f"; {len(p.exhausted)} edges out of attempts" if p.exhausted else "")
                     + (f"; {len(p.uncoverable)} uncoverable under the loop bound" if p.uncoverable else ""))
    return "\n".join(lines)

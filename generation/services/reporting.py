"""What a job produced and cost: the funnel (paper Table 1), counters, graph pictures."""
from __future__ import annotations

from collections import Counter
from typing import Any

from django.db.models import Count, Q, Sum

from generation.models import (
    Api,
    Conversation,
    ConversationGraph,
    Discard,
    Flowgraph,
    GenerationJob,
    Intent,
    LLMCall,
    Procedure,
    SampledPath,
    Stage,
    StageProgress,
    Test,
)
from generation.stages import STAGE_ORDER

STAGE_LABELS = dict(Stage.choices)
# The paper's Table 1 columns, by stage.
FUNNEL_COLUMNS = {
    "intents": "Intents", "procedures": "Procedures", "apis": "Procedures with APIs",
    "flowgraph": "Flowgraphs", "conversation_graph": "Conversation graphs", "noise": "Noisy graphs",
    "paths": "Paths", "conversations": "Conversations", "tests": "Tests",
}


def job_funnel(job: GenerationJob) -> list[dict[str, Any]]:
    """One row per stage: units generated / passed / discarded by reason, items, tokens, cost."""
    progress = {p.stage: p for p in StageProgress.objects.filter(job=job)}
    reasons: dict[str, Counter] = {}
    for row in Discard.objects.filter(job=job).values("stage", "reason").annotate(n=Count("id")):
        reasons.setdefault(row["stage"], Counter())[row["reason"]] = row["n"]
    usage = {row["stage"]: row for row in LLMCall.objects.filter(job=job).values("stage").annotate(
        calls=Count("id"), prompt_tokens=Sum("prompt_tokens"), completion_tokens=Sum("completion_tokens"),
        cost=Sum("cost_usd"), errors=Count("id", filter=Q(outcome="error")),
        retried=Count("id", filter=Q(outcome="retried")), cached=Count("id", filter=Q(outcome="cached")),
        invalid=Count("id", filter=Q(outcome="invalid")), in_flight=Count("id", filter=Q(outcome="in_flight")),
        lost=Count("id", filter=Q(outcome="lost_in_flight")),
        estimated=Count("id", filter=Q(tokens_estimated=True, outcome__in=["ok", "in_flight", "lost_in_flight"])))}
    rows = []
    for stage in STAGE_ORDER:
        p = progress.get(stage)
        if p is None:
            continue
        u = usage.get(stage, {})
        rows.append({
            "stage": stage, "label": FUNNEL_COLUMNS[stage], "state": p.state, "total": p.total, "done": p.done,
            "percent": p.percent, "generated": p.generated, "passed": p.passed, "discarded": p.discarded,
            "failed": p.failed, "imported": p.imported, "reasons": dict(reasons.get(stage, {})),
            "calls": u.get("calls", 0), "prompt_tokens": u.get("prompt_tokens") or 0,
            "completion_tokens": u.get("completion_tokens") or 0, "cost": u.get("cost") or 0,
            "errors": u.get("errors", 0), "retried": u.get("retried", 0), "cached": u.get("cached", 0),
            "invalid": u.get("invalid", 0), "in_flight": u.get("in_flight", 0), "lost": u.get("lost", 0),
            "estimated": u.get("estimated", 0), "repaired": p.repaired, "resampled": p.resampled,
            "notes": dict(p.notes or {}),
        })
    return rows


def job_counters(job: GenerationJob) -> dict[str, Any]:
    return {r["stage"]: {"generated": r["generated"], "passed": r["passed"], "discarded": r["reasons"],
                         "failed": r["failed"], "imported": r["imported"], "repaired": r["repaired"],
                         "resampled": r["resampled"],
                         "notes": r["notes"], "lost_in_flight": r["lost"]} for r in job_funnel(job)}


def format_funnel(job: GenerationJob) -> str:
    """The funnel as a plain-text table (for `generate --wait`)."""
    rows = job_funnel(job)
    header = (f"{'stage':<22}{'state':<9}{'generated':>10}{'passed':>8}{'repaired':>9}{'resampled':>10}{'discarded':>10}"
              f"{'failed':>7}  reasons")
    lines = [header, "-" * len(header)]
    for r in rows:
        reasons = ", ".join(f"{k}={v}" for k, v in sorted({**r["reasons"], **r["notes"]}.items()))
        lines.append(f"{r['label']:<22}{r['state']:<9}{r['generated']:>10}{r['passed']:>8}{r['repaired']:>9}{r['resampled']:>10}"
                     f"{r['discarded']:>10}{r['failed']:>7}  {reasons}")
    job.refresh_from_db()
    lines.append("")
    lines.append(f"job {job.pk}: {job.status}; tokens {job.prompt_tokens} in / {job.completion_tokens} out; "
                 f"cost ${job.cost_usd:.4f}" + (f"; error: {job.error}" if job.error else ""))
    return "\n".join(lines)


ARTIFACT_MODELS = [("intents", Intent), ("procedures", Procedure), ("apis", Api), ("flowgraph", Flowgraph),
                   ("conversation_graph", ConversationGraph), ("paths", SampledPath),
                   ("conversations", Conversation), ("tests", Test)]


def job_artifact_counts(job: GenerationJob) -> dict[str, int]:
    return {stage: model.objects.filter(job=job).count() for stage, model in ARTIFACT_MODELS}


# --------------------------------------------------------------------------- graph pictures


def graph_svg(*, obj: Flowgraph | ConversationGraph | SampledPath) -> dict:
    """The drawing of a graph row as a page shows it (generation.drawing_cache.graph_drawing_for:
    the stored drawing, or queued for the worker and polled for; never drawn here).

    A sampled path shows its conversation graph's stored drawing; the page highlights the path
    in the browser (static/js/graph.js, the figure's data-path), as the review page does.
    """
    from django.utils.safestring import mark_safe

    from generation.drawing_cache import graph_drawing_for

    got = graph_drawing_for(obj.conversation_graph if isinstance(obj, SampledPath) else obj)
    return {**got, "svg": mark_safe(got["svg"])}  # noqa: S308 - Graphviz escapes every label

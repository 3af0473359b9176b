"""Generation workflows: create, advance, cancel and inspect jobs; import; the demo builder.

How a job runs (no chords, no result backend — progress lives on StageProgress rows):

1. `job_create` stores the job, one StageProgress per stage, and any imported items, then
   enqueues `job_advance` after commit.
2. `job_advance` finds the first unfinished stage. A waiting stage is *claimed*
   (waiting → planning, a conditional update only one caller wins), its work items are
   published (one task per item, ids only), then it becomes running. A running stage whose items
   are all done becomes done and the loop moves on; when no stage is left the job succeeds.
3. `item_run` processes one item outside any transaction (LLM calls), then in one transaction
   locks the stage row, writes the item's rows keyed on (job, key), records the item's outcome in
   `StageProgress.items` and, if it was the last item, marks the stage done. The caller then
   enqueues `job_advance`.

Idempotency: an item already in `items` writes nothing; rows are written with update_or_create on
the job-scoped key (a DB unique constraint); a redelivered task (acks_late, SIGKILLed worker)
therefore finishes the job with no duplicates. A redelivered `item_run` for a finished stage
re-enqueues `job_advance`, which is safe to run any number of times.
"""
from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta
from typing import Any, Callable

from django.db import IntegrityError, transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from generation import llm, multi_api
from generation.models import (
    Api,
    Conversation,
    ConversationGraph,
    Discard,
    Flowgraph,
    GenerationJob,
    IllegalTransition,
    Intent,
    JobStatus,
    LLMCall,
    Origin,
    Procedure,
    SampledPath,
    Stage,
    StageProgress,
    StageState,
    Test,
)
from generation.pipeline.apis import ApiFormatError, api_to_dict, parse_api_list
from generation.pipeline.formats import GraphFormatError, graph_to_json, load_graph, write_graph_text
from generation.pipeline.sampling import SAMPLERS
from generation.pipeline.validate import errors, validate_flowgraph
from generation.stages import STAGE_ORDER, ItemResult, needs_llm, plan, process, violations_json

Publisher = Callable[[str, str], None]

# A stage left in `planning` this long was claimed by a worker that died while publishing.
PLANNING_STALE = timedelta(seconds=60)

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
    return multi_api.config_normalise(cfg)


def llm_stages(cfg: dict[str, Any]) -> list[str]:
    start = STAGE_ORDER.index(cfg["start"])
    return [s for s in STAGE_ORDER[start:] if needs_llm(s, cfg)]


# --------------------------------------------------------------------------- imports


def import_parse(data: Any) -> tuple[str, list[dict[str, Any]]]:
    """Check an import document; return (the first stage to run, the normalised records).

    Shapes: {"intents": [{"client", "issue", "name"}]} or {"procedures": [{"intent": {...},
    "title", "text", "apis": [...]?, "flowgraph": "<text or JSON>"?}]}. The deepest level that
    *every* procedure carries decides where the job starts.
    """
    if not isinstance(data, dict):
        raise JobConfigError("the import file must hold a JSON object with 'intents' or 'procedures'")
    if "intents" in data and "procedures" not in data:
        items = data["intents"]
        if not isinstance(items, list) or not items:
            raise JobConfigError("'intents' must be a non-empty list")
        out = []
        for i, it in enumerate(items):
            if not isinstance(it, dict) or not all(isinstance(it.get(f), str) and it[f].strip()
                                                   for f in ("client", "issue", "name")):
                raise JobConfigError(f"intents[{i}]: needs non-empty 'client', 'issue' and 'name'")
            out.append({"client": it["client"].strip(), "issue": it["issue"].strip(), "name": it["name"].strip()})
        return "procedures", out
    items = data.get("procedures")
    if not isinstance(items, list) or not items:
        raise JobConfigError("the import file needs a non-empty 'intents' or 'procedures' list")
    out = []
    for i, p in enumerate(items):
        if not isinstance(p, dict) or not isinstance(p.get("text"), str) or not p["text"].strip():
            raise JobConfigError(f"procedures[{i}]: needs a non-empty 'text'")
        intent = p.get("intent") or {}
        if isinstance(intent, str):
            intent = {"name": intent}
        rec: dict[str, Any] = {
            "title": str(p.get("title", ""))[:300], "text": p["text"],
            "intent": {"client": str(intent.get("client", "imported"))[:200] or "imported",
                       "issue": str(intent.get("issue", p.get("title", "")) or "imported procedure"),
                       "name": str(intent.get("name", p.get("title", "")) or f"procedure {i}")[:200]},
        }
        if "apis" in p:
            try:
                rec["apis"] = [api_to_dict(a) for a in parse_api_list(p["apis"])]
            except ApiFormatError as exc:
                raise JobConfigError(f"procedures[{i}].apis: {exc}") from None
        if p.get("flowgraph"):
            if "apis" not in rec:
                raise JobConfigError(f"procedures[{i}]: a flowgraph needs the procedure's 'apis'")
            fg = p["flowgraph"]
            try:
                g = load_graph(fg if isinstance(fg, str) else json.dumps(fg), kind="flowgraph")
            except (GraphFormatError, ValueError) as exc:
                raise JobConfigError(f"procedures[{i}].flowgraph: {exc}") from None
            rec["flowgraph"] = graph_to_json(g)
            rec["flowgraph_text"] = write_graph_text(g)
        out.append(rec)
    if all("flowgraph" in r for r in out):
        start = "conversation_graph"
    elif all("apis" in r for r in out):
        start = "flowgraph"
    else:
        start = "apis"
    return start, out


def _import_rows(job: GenerationJob, start: str, records: list[dict[str, Any]]) -> None:
    counts: Counter = Counter()
    discards: list[Discard] = []
    common = {"job": job, "origin": Origin.IMPORTED}
    if start == "procedures":
        for i, r in enumerate(records):
            Intent.objects.create(key=f"import:intent:{i}", **common, **r)
        counts["intents"] = len(records)
    else:
        for i, r in enumerate(records):
            intent = Intent.objects.create(key=f"import:intent:{i}", **common, **r["intent"])
            proc = Procedure.objects.create(key=f"import:procedure:{i}", intent=intent, title=r["title"],
                                            text=r["text"], **common)
            counts["intents"] += 1
            counts["procedures"] += 1
            if start in ("flowgraph", "conversation_graph"):
                for a in r["apis"]:
                    Api.objects.create(key=f"import:api:{i}:{a['name']}"[:200], procedure=proc, name=a["name"],
                                       description=a["desc"], parameters=a["params"],
                                       output_name=a["output"]["name"], output_type=a["output"]["type"], **common)
                counts["apis"] += 1
            if start == "conversation_graph":
                from generation.pipeline.formats import graph_from_json

                g = graph_from_json(r["flowgraph"])
                violations = validate_flowgraph(g, [a["name"] for a in r["apis"]])
                if errors(violations):
                    # Imported flowgraphs go through the same automatic filter as generated ones.
                    first = errors(violations)[0]
                    discards.append(Discard(job=job, stage=Stage.FLOWGRAPH, key=f"import:flowgraph:{i}",
                                            reason=first.rule, example=r["flowgraph_text"][:4000],
                                            detail="; ".join(str(v) for v in errors(violations)[:10])[:4000]))
                    continue
                Flowgraph.objects.create(key=f"import:flowgraph:{i}", procedure=proc, data=r["flowgraph"],
                                         text=r["flowgraph_text"], validation=violations_json(violations), **common)
                counts["flowgraph"] += 1
    Discard.objects.bulk_create(discards)
    bad = Counter(d.stage for d in discards)
    now = timezone.now()
    for stage in STAGE_ORDER[: STAGE_ORDER.index(start)]:
        n = counts.get(stage, 0)
        StageProgress.objects.filter(job=job, stage=stage).update(
            state=StageState.DONE, imported=n + bad.get(stage, 0), generated=n + bad.get(stage, 0), passed=n,
            discarded=bad.get(stage, 0), started_at=now, finished_at=now)


# --------------------------------------------------------------------------- job lifecycle


# Rows already in the database (imported, or from any job) a job can start from:
# level → (the first stage to run, what the level is called on the page).
EXISTING_LEVELS: dict[str, tuple[str, str]] = {
    "intents": ("procedures", "intents"),
    "procedures": ("apis", "procedures"),
    "apis": ("flowgraph", "procedures with APIs"),
    "flowgraph": ("conversation_graph", "flowgraphs"),
}


def existing_imports(level: str) -> Any:
    """Imported rows that belong to no job, at one level (for 'start from what was imported')."""
    base = {"origin": Origin.IMPORTED, "job__isnull": True}
    if level == "intents":
        return Intent.objects.filter(**base)
    if level == "procedures":
        return Procedure.objects.filter(**base)
    if level == "apis":
        return Procedure.objects.filter(**base, apis__isnull=False).distinct()
    if level == "flowgraph":
        return Flowgraph.objects.filter(**base)
    raise JobConfigError(f"unknown level {level!r}")


@transaction.atomic
def job_create(*, config: dict[str, Any], created_by=None, name: str = "", import_data: Any = None,
               existing: str | None = None, existing_ids: list[int] | None = None,
               enqueue: bool = True) -> GenerationJob:
    """Create a queued job (validating settings and imports) and start it after commit.

    A job starts by generating intents, from `import_data` (an import document, written as this
    job's rows), or from rows already in the database: `existing` names the level and
    `existing_ids` the rows (default: every imported row of that level that belongs to no job).
    Raises JobConfigError with a message for the user, including when an LLM stage would run
    without an endpoint.
    """
    config = dict(config)
    records: list[dict[str, Any]] = []
    if import_data is not None:
        start, records = import_parse(import_data)
        config["start"] = start
        config.setdefault("intents", 0)
    elif existing:
        if existing not in EXISTING_LEVELS:
            raise JobConfigError(f"cannot start from {existing!r}")
        ids = list(existing_ids) if existing_ids is not None else list(
            existing_imports(existing).order_by("pk").values_list("pk", flat=True))
        if not ids:
            raise JobConfigError(f"there are no imported {EXISTING_LEVELS[existing][1]} to start from")
        config["start"] = EXISTING_LEVELS[existing][0]
        config["input_ids"] = {existing: ids}
        config.setdefault("intents", 0)
    cfg = job_config_normalise(config)
    needing = llm_stages(cfg)
    if needing and not llm.endpoint_configured():
        raise JobConfigError(f"{llm.NO_ENDPOINT_MESSAGE} This job needs it for: {', '.join(needing)}.")
    job = GenerationJob.objects.create(name=name[:200], config=cfg, created_by=created_by)
    StageProgress.objects.bulk_create([StageProgress(job=job, stage=s) for s in STAGE_ORDER])
    if records:
        _import_rows(job, cfg["start"], records)
    elif existing:
        now = timezone.now()
        n = len(cfg["input_ids"][existing])
        StageProgress.objects.filter(job=job, stage__in=STAGE_ORDER[:STAGE_ORDER.index(cfg["start"])]).update(
            state=StageState.SKIPPED, started_at=now, finished_at=now)
        StageProgress.objects.filter(job=job, stage=existing).update(
            state=StageState.DONE, imported=n, generated=n, passed=n)
    if enqueue:
        from generation.tasks import job_advance_task

        transaction.on_commit(lambda: job_advance_task.delay(job.pk))
    return job


def _transition(job_id: int, to: str, error: str = "") -> bool:
    """Move a job to `to` if legal; False when another worker already moved it."""
    with transaction.atomic():
        job = GenerationJob.objects.select_for_update().get(pk=job_id)
        if job.status == to or not job.can_transition(to):
            return False
        job.transition(to, error=error)
        if job.is_terminal:
            job.counters = job_counters(job)
        job.save()
        return True


def job_fail(*, job_id: int, error: str) -> bool:
    return _transition(job_id, JobStatus.FAILED, error=error)


def job_cancel(*, job: GenerationJob) -> GenerationJob:
    """Stop new work: a queued job is cancelled at once, a running one drains to cancelled."""
    if job.status == JobStatus.QUEUED:
        _transition(job.pk, JobStatus.CANCELLED)
    elif job.status == JobStatus.RUNNING:
        _transition(job.pk, JobStatus.CANCELLING)
        from generation.tasks import job_advance_task

        transaction.on_commit(lambda: job_advance_task.delay(job.pk))
    elif job.is_terminal:
        raise IllegalTransition(f"job {job.pk} is {job.status} and cannot be cancelled")
    job.refresh_from_db()
    return job


def _stage_try_complete(sp_id: int) -> bool:
    """Mark a running stage done when every item is done; True when the stage is done now."""
    with transaction.atomic():
        sp = StageProgress.objects.select_for_update().get(pk=sp_id)
        if sp.state == StageState.DONE:
            return True
        if sp.state == StageState.RUNNING and len(sp.items) >= sp.total:
            sp.state = StageState.DONE
            sp.finished_at = timezone.now()
            sp.save(update_fields=["state", "finished_at"])
            return True
        return False


def job_advance(*, job_id: int, publish: Publisher) -> None:
    """Move the job forward as far as it can go now; safe to call any number of times."""
    while True:
        job = GenerationJob.objects.get(pk=job_id)
        if job.is_terminal:
            return
        if job.status == JobStatus.CANCELLING:
            _transition(job_id, JobStatus.CANCELLED)
            return
        if job.status == JobStatus.QUEUED:
            _transition(job_id, JobStatus.RUNNING)
            continue
        sp = (StageProgress.objects.filter(job_id=job_id)
              .exclude(state__in=[StageState.DONE, StageState.SKIPPED]).order_by())
        pending = sorted(sp, key=lambda p: STAGE_ORDER.index(p.stage))
        if not pending:
            _transition(job_id, JobStatus.SUCCEEDED)
            return
        current = pending[0]
        if current.state == StageState.RUNNING:
            if _stage_try_complete(current.pk):
                continue
            return
        if current.state == StageState.PLANNING:
            stale = current.started_at and timezone.now() - current.started_at > PLANNING_STALE
            if not stale:
                return  # another advance is publishing this stage right now
            keys = [k for k in plan(job, current.stage) if k not in current.items]
            for key in keys:
                publish(current.stage, key)
            StageProgress.objects.filter(pk=current.pk, state=StageState.PLANNING).update(state=StageState.RUNNING)
            continue
        # Waiting: plan it, or skip it when it has nothing to do.
        keys = plan(job, current.stage)
        if not keys:
            StageProgress.objects.filter(pk=current.pk, state=StageState.WAITING).update(
                state=StageState.SKIPPED, started_at=timezone.now(), finished_at=timezone.now())
            continue
        if needs_llm(current.stage, job.config) and not llm.endpoint_configured():
            job_fail(job_id=job_id, error=f"{current.stage}: {llm.NO_ENDPOINT_MESSAGE}")
            return
        claimed = StageProgress.objects.filter(pk=current.pk, state=StageState.WAITING).update(
            state=StageState.PLANNING, total=len(keys), started_at=timezone.now())
        if not claimed:
            continue  # someone else claimed it; re-read
        for key in keys:
            publish(current.stage, key)
        StageProgress.objects.filter(pk=current.pk, state=StageState.PLANNING).update(state=StageState.RUNNING)


def _write(job: GenerationJob, stage: str, result: ItemResult) -> None:
    for out in result.outputs:
        fields = {"origin": Origin.GENERATED, "validation": [], **out.fields}
        try:
            with transaction.atomic():
                out.model.objects.update_or_create(job=job, key=out.key, defaults=fields)
        except IntegrityError:
            # Another run of this item created the row between our read and our insert.
            out.model.objects.filter(job=job, key=out.key).update(**fields)
    for d in result.discards:
        Discard.objects.update_or_create(job=job, stage=stage, key=d.key,
                                         defaults={"reason": d.reason, "detail": d.detail, "example": d.example})


def item_run(*, job_id: int, stage: str, key: str) -> bool:
    """Process one work item once; True when the caller should enqueue `job_advance`."""
    sp = StageProgress.objects.only("id", "items", "state").get(job_id=job_id, stage=stage)
    if key in sp.items:
        return sp.state == StageState.DONE  # a redelivery: make sure the job moves on
    job = GenerationJob.objects.get(pk=job_id)
    if job.status != JobStatus.RUNNING:
        result = ItemResult(outcome="cancelled")
    else:
        result = process(job, key)
        if result.outcome != "failed":
            result.outcome = "passed" if result.passed else "discarded"
    with transaction.atomic():
        sp = StageProgress.objects.select_for_update().get(pk=sp.pk)
        if key in sp.items:
            return False
        _write(job, stage, result)
        sp.items[key] = result.outcome
        sp.done = len(sp.items)
        sp.generated += result.generated
        sp.passed += result.passed
        sp.discarded += result.discarded
        sp.failed += result.failed
        completed = sp.state == StageState.RUNNING and len(sp.items) >= sp.total
        if completed:
            sp.state = StageState.DONE
            sp.finished_at = timezone.now()
        sp.save()
    return completed


def job_run_inline(*, job: GenerationJob) -> GenerationJob:
    """Run a job to the end in this process (demo data, tests, `generate --inline`)."""

    def publish(stage: str, key: str) -> None:
        item_run(job_id=job.pk, stage=stage, key=key)

    job_advance(job_id=job.pk, publish=publish)
    job.refresh_from_db()
    return job


def job_resume(*, job: GenerationJob) -> int:
    """Re-publish the unfinished items of the job's open stage; returns how many were sent.

    Used after a crash: a stage left in planning or running whose messages were lost.
    """
    from generation.tasks import item_run_task, job_advance_task

    sent = 0
    for sp in StageProgress.objects.filter(job=job, state__in=[StageState.RUNNING, StageState.PLANNING]):
        for key in plan(job, sp.stage):
            if key not in sp.items:
                item_run_task.delay(job.pk, sp.stage, key)
                sent += 1
        StageProgress.objects.filter(pk=sp.pk, state=StageState.PLANNING).update(state=StageState.RUNNING)
    job_advance_task.delay(job.pk)
    return sent


def jobs_recover() -> int:
    """Resume every job that is not finished (see tasks.jobs_recover_task)."""
    sent = 0
    for job in GenerationJob.objects.filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.CANCELLING]):
        sent += job_resume(job=job)
    return sent


# --------------------------------------------------------------------------- demo


def demo_build(*, flowgraphs: list[Flowgraph], paths: int = 3, noise: float = 0.0, seed: int = 0,
               sampler: str = "algorithm1", name: str = "Demo build", created_by=None) -> GenerationJob:
    """Derive conversation graph → (noise) → paths → conversations → tests from existing flowgraphs.

    Deterministic and offline (no LLM), run in this process; the rows belong to a new succeeded
    job so they show on the dashboard with their funnel.
    """
    job = job_create(
        config={"paths": paths, "noise": noise, "seed": seed, "sampler": sampler,
                "conversation_graph": "deterministic", "conversations": "offline"},
        existing="flowgraph", existing_ids=[f.pk for f in flowgraphs], name=name, created_by=created_by,
        enqueue=False,
    )
    return job_run_inline(job=job)


# --------------------------------------------------------------------------- reporting

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
        retried=Count("id", filter=Q(outcome="retried")), cached=Count("id", filter=Q(outcome="cached")))}
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
        })
    return rows


def job_counters(job: GenerationJob) -> dict[str, Any]:
    return {r["stage"]: {"generated": r["generated"], "passed": r["passed"], "discarded": r["reasons"],
                         "failed": r["failed"], "imported": r["imported"]} for r in job_funnel(job)}


def format_funnel(job: GenerationJob) -> str:
    """The funnel as a plain-text table (for `generate --wait`)."""
    rows = job_funnel(job)
    header = f"{'stage':<22}{'state':<9}{'generated':>10}{'passed':>8}{'discarded':>10}{'failed':>7}  reasons"
    lines = [header, "-" * len(header)]
    for r in rows:
        reasons = ", ".join(f"{k}={v}" for k, v in sorted(r["reasons"].items()))
        lines.append(f"{r['label']:<22}{r['state']:<9}{r['generated']:>10}{r['passed']:>8}{r['discarded']:>10}"
                     f"{r['failed']:>7}  {reasons}")
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


def graph_svg(*, obj: Flowgraph | ConversationGraph | SampledPath) -> tuple[str, str]:
    """(svg, error message): the Graphviz picture of a graph row, cached on the row's svg field.

    A sampled path is drawn as its conversation graph with the path highlighted (not cached: the
    path row has no picture of its own).
    """
    from generation.pipeline.formats import graph_from_json
    from generation.pipeline.render import GraphvizMissing, to_svg

    if isinstance(obj, SampledPath):
        source, highlight = obj.conversation_graph, obj.node_ids
    else:
        source, highlight = obj, None
    if highlight is None and source.svg:
        return source.svg, ""
    try:
        svg = to_svg(graph_from_json(source.data), highlight_path=highlight)
    except GraphvizMissing as exc:
        return "", str(exc)
    except (GraphFormatError, RuntimeError, OSError) as exc:
        return "", f"The graph could not be drawn: {exc}"
    if highlight is None:
        type(source).objects.filter(pk=source.pk).update(svg=svg)
    return svg, ""

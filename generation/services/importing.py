"""Import documents: check them, and write their rows as the first stages of a job."""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

from django.utils import timezone

from generation.drawings import graphs_stored
from generation.models import (
    Api, Discard, Flowgraph, GenerationJob, Intent, Origin, Procedure, Stage, StageProgress, StageState,
)
from generation.pipeline.apis import ApiFormatError, api_to_dict, parse_api_list
from generation.pipeline.formats import GraphFormatError, graph_to_json, load_graph, write_graph_text
from generation.pipeline.validate import errors, validate_flowgraph
from generation.services.config import JobConfigError
from generation.stages import STAGE_ORDER, violations_json


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
                specs = parse_api_list(p["apis"])
            except ApiFormatError as exc:
                raise JobConfigError(f"procedures[{i}].apis: {exc}") from None
            rec["apis"] = [api_to_dict(a) for a in specs]
            rec["not_kept"] = [f"procedures[{i}].apis: {line}" for line in specs.report]
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
    not_kept = [line for r in records for line in r.get("not_kept", [])]
    if not_kept:  # what the API documents declare but the import did not keep: on the job's page
        job.config = {**job.config, "import_not_kept": not_kept}
        job.save(update_fields=["config"])
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
                                       description=a["desc"], parameters=a["params"], outputs=a.get("outputs") or [],
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
                fg = Flowgraph.objects.create(key=f"import:flowgraph:{i}", procedure=proc, data=r["flowgraph"],
                                              text=r["flowgraph_text"], validation=violations_json(violations),
                                              **common)
                graphs_stored(Flowgraph, [fg.pk])
                counts["flowgraph"] += 1
    Discard.objects.bulk_create(discards)
    bad = Counter(d.stage for d in discards)
    now = timezone.now()
    for stage in STAGE_ORDER[: STAGE_ORDER.index(start)]:
        n = counts.get(stage, 0)
        StageProgress.objects.filter(job=job, stage=stage).update(
            state=StageState.DONE, imported=n + bad.get(stage, 0), generated=n + bad.get(stage, 0), passed=n,
            discarded=bad.get(stage, 0), started_at=now, finished_at=now)


"""The standalone runner's CI gates and outputs on a run in the database (`manage.py evaluate
--fail-under/--baseline/--junit/--json`): the run's results become the runner's per-test records,
so the two give the same report, the same JUnit file and the same verdicts."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evaluation.models import EvaluationRun, ResultState
from evaluation.runner import core, gates
from evaluation.runner.junit import write_junit
from evaluation.services import run_result_rows


def run_records(run: EvaluationRun) -> list[dict[str, Any]]:
    records = []
    for row in run_result_rows(run):
        if row["state"] != ResultState.DONE:
            continue
        records.append({
            "test_id": row["test_id"], "conversation_id": row["conversation_id"], "position": row["position"],
            "expected_type": row["expected_type"], "expected": row["expected"],
            "predicted_type": row["predicted_type"], "answer": row["answer"],
            "similarity": float(row["similarity"]) if row["similarity"] != "" else None,
            **{f: bool(row[f]) for f in core.FLAGS}, "reason": row["reason"],
            "latency_ms": row["latency_ms"], "raw": row["raw_reply"],
        })
    return records


def run_gates(run: EvaluationRun, *, fail_under: list[str], baseline: str | None = None, junit: str | None = None,
              json_out: str | None = None, bootstrap: int = 1000) -> dict[str, Any]:
    """Check the gates, write the files; returns the results document (`passed` says it all).
    Raises gates.GateError for a gate that cannot be understood."""
    thresholds = [gates.parse_threshold(t) for t in fail_under]
    base = gates.load_baseline(baseline) if baseline else None
    records = run_records(run)
    summary = core.report(records, bootstrap=bootstrap)
    checked = gates.check_thresholds(summary["metrics"], thresholds)
    if base is not None:
        checked += gates.check_baseline(records, summary["metrics"], base, bootstrap=bootstrap)
    label = f"{run.release.name}@{run.release.version}"
    elapsed = (run.finished_at - run.started_at).total_seconds() if run.finished_at and run.started_at else 0.0
    doc = core.results_document(
        records, summary, release={"name": run.release.name, "version": run.release.version, "label": label,
                                   "content_hash": run.release.content_hash},
        agent={"name": run.agent.name, "kind": run.agent.mode, "run": run.pk}, threshold=run.threshold,
        similarity=run.similarity, gates=checked, elapsed=elapsed)
    if json_out:
        Path(json_out).write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")
    if junit:
        write_junit(junit, records, checked, release=label, elapsed=elapsed, timestamp=doc["created_at"],
                    properties={"agent": run.agent.name, "run": str(run.pk)})
    return doc


def gate_lines(doc: dict[str, Any]) -> list[str]:
    return [f"  {'PASS' if g['passed'] else 'FAIL'}  {g['message']}" for g in doc["gates"]]


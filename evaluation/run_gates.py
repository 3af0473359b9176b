"""The standalone runner's CI gates and outputs on a run in the database (`manage.py evaluate
--fail-under/--baseline/--junit/--json`): the run's results become the runner's per-test records
(one per test and trial), so the two give the same report, the same JUnit file and the same
verdicts. A test without an answer is a ``failed`` record (a JUnit <error>), as in the runner."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evaluation.models import EvaluationRun, ResultState, RunStatus
from evaluation.runner import core, gates
from evaluation.runner.junit import write_junit
from evaluation.services import run_current_report, run_result_rows


def release_identity(run: EvaluationRun) -> dict[str, Any]:
    r = run.release
    return {"id": r.pk, "name": r.name, "version": r.version, "content_hash": r.content_hash,
            "label": f"{r.name}@{r.version}"}


def run_records(run: EvaluationRun) -> list[dict[str, Any]]:
    """Every test and trial of the run as a runner record; tests without an answer (a failed call,
    an outage, or not reached by a run that stopped) are unanswered."""
    records = []
    for row in run_result_rows(run):
        answered = row["state"] == ResultState.DONE
        if not answered and run.is_active:
            continue
        records.append({
            "test_id": row["test_id"], "conversation_id": row["conversation_id"], "position": row["position"],
            "trial": row["trial"], "expected_type": row["expected_type"], "expected": row["expected"],
            "predicted_type": row["predicted_type"] if answered else "failed", "answer": row["answer"],
            "similarity": float(row["similarity"]) if row["similarity"] != "" else None,
            **{f: bool(row[f]) if answered else False for f in core.FLAGS},
            "reason": row["reason"] or ("" if answered else "the run stopped before this test"),
            "latency_ms": row["latency_ms"], "raw": row["raw_reply"],
        })
    return records


def check_baseline_release(run: EvaluationRun, baseline_path: str) -> dict[str, Any]:
    """Load a baseline and refuse one from another release (gates.GateError)."""
    base = gates.load_baseline(baseline_path)
    gates.check_same_release(release_identity(run), base)
    return base


def run_gates(run: EvaluationRun, *, fail_under: list[str], baseline: str | None = None, junit: str | None = None,
              json_out: str | None = None, bootstrap: int = 1000) -> dict[str, Any]:
    """Check the gates, write the files; returns the results document (`passed` says it all; a
    failed run never passes). Raises gates.GateError for a gate or baseline that cannot be used."""
    thresholds = [gates.parse_threshold(t) for t in fail_under]
    base = check_baseline_release(run, baseline) if baseline else None
    records = run_records(run)
    summary = core.report(records, bootstrap=bootstrap, max_error_share=run.max_error_share)
    product = run_current_report(run)
    # The run's own verdict (it also fails on any unanswered test, which resume can retry).
    summary.update(status=run.status, complete=bool(product.get("complete")),
                   reason=run.error if run.status == RunStatus.FAILED else "")
    summary["errors"] = {**summary["errors"], "failed": run.status == RunStatus.FAILED, "reason": summary["reason"]}
    checked = gates.check_thresholds(summary["metrics"], thresholds)
    if base is not None:
        checked += gates.check_baseline(records, summary["metrics"], base, bootstrap=bootstrap)
    identity = release_identity(run)
    elapsed = (run.finished_at - run.started_at).total_seconds() if run.finished_at and run.started_at else 0.0
    doc = core.results_document(
        records, summary, release=identity, agent={"name": run.agent.name, "kind": run.agent.mode, "run": run.pk},
        threshold=run.threshold, similarity=run.similarity, gates=checked, elapsed=elapsed)
    doc["passed"] = doc["passed"] and run.status == RunStatus.SUCCEEDED
    if json_out:
        Path(json_out).write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")
    if junit:
        write_junit(junit, records, checked, release=identity["label"], elapsed=elapsed, timestamp=doc["created_at"],
                    health=summary["errors"], properties={"agent": run.agent.name, "run": str(run.pk)})
    return doc


def gate_lines(doc: dict[str, Any]) -> list[str]:
    return [f"  {'PASS' if g['passed'] else 'FAIL'}  {g['message']}" for g in doc["gates"]]

"""Evaluate an agent on a portable release without Django: ask, judge, aggregate.

Each test (and each trial of it) becomes one *record* (a plain dict, the same columns as the
product's per-test download, with its ``trial`` index): what was expected, what the agent did, each
metric flag, the reason when wrong. The records are what the JSON report, the JUnit file and the
regression gates read, so `manage.py evaluate` can build the same records from its database rows
and share the gates. A test without an answer (an outage: evaluation/reader.py) is unanswered
(predicted type ``failed``); :mod:`evaluation.run_health` decides whether the run measured the
agent at all, and a circuit breaker (run_health.Breaker) stops asking after consecutive failed
requests.
"""
from __future__ import annotations

import json
import re
import time
import unicodedata
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from evaluation import metrics as M
from evaluation import reader as R
from evaluation import run_health as H
from evaluation import trials as T

RESULTS_FORMAT = "almita-results/1"
FLAGS = ("reply_recalled", "reply_correct", "api_recalled", "api_correct", "params_correct", "correct")

# --------------------------------------------------------------------------- lexical similarity
# The same token-overlap F1 as evaluation.similarity.lexical_f1 (a test keeps the two equal):
# that module reads Django settings at import, which the runner must not need.

_WORD = re.compile(r"[\w']+")


def _tokens(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text or "").lower())


def lexical_f1(candidate: str, reference: str) -> float:
    c, r = Counter(_tokens(candidate)), Counter(_tokens(reference))
    if not c and not r:
        return 1.0
    overlap = sum((c & r).values())
    if not overlap:
        return 0.0
    precision, recall = overlap / sum(c.values()), overlap / sum(r.values())
    return 2 * precision * recall / (precision + recall)


# --------------------------------------------------------------------------- records


def action_text(action: dict[str, Any]) -> str:
    if action.get("type") == M.REPLY:
        return str(action.get("content", ""))
    if action.get("type") == M.API_CALL:
        params = json.dumps(action.get("parameters") or {}, ensure_ascii=False, sort_keys=True)
        return f"{action.get('name')}({params})"
    return ""


def record_for(data: dict[str, Any], action: dict[str, Any], *, threshold: float,
               similarity: Callable[[str, str], float] = lexical_f1, raw: str = "",
               latency_ms: int = 0, trial: int = 0) -> dict[str, Any]:
    """Judge one answer (metrics.judge; an outage is an unanswered test) and return its record."""
    expected = data.get("expected") or {}
    sim = None
    if expected.get("type") == M.REPLY and action.get("type") == M.REPLY:
        sim = similarity(str(action.get("content", "")), str(expected.get("content", "")))
    if R.is_outage(action):
        outcome = M.unanswered(expected, reason=str(action.get("reason") or "no answer"))
    else:
        outcome = M.judge(expected, action, similarity=sim, threshold=threshold)
    reason = outcome.reason  # why it is wrong, and the reader's note
    return {
        "test_id": data.get("test_id"), "conversation_id": data.get("conversation_id"),
        "position": data.get("position"), "trial": trial, "expected_type": outcome.expected_type,
        "expected": action_text(expected), "predicted_type": outcome.predicted_type,
        "answer": action_text(action), "similarity": outcome.similarity,
        **{f: bool(getattr(outcome, f)) for f in FLAGS},
        "reason": reason, "latency_ms": latency_ms, "raw": raw,
    }


def outcome_of(record: dict[str, Any]) -> M.Outcome:
    return M.Outcome(conversation_id=record["conversation_id"], expected_type=record["expected_type"],
                     predicted_type=record["predicted_type"], similarity=record.get("similarity"),
                     reason=record.get("reason") or "", **{f: bool(record.get(f)) for f in FLAGS})


def failure_message(record: dict[str, Any]) -> str:
    """"expected vs got" for a wrong test, as a CI shows it."""
    got = record.get("answer") or "(no usable answer)"
    msg = f"expected {record['expected_type']}: {record['expected']} | got {record['predicted_type']}: {got}"
    if record.get("similarity") is not None and record["expected_type"] == M.REPLY:
        msg += f" | similarity {record['similarity']:.3f}"
    if record.get("reason"):
        msg += f" | {record['reason']}"
    return msg


# --------------------------------------------------------------------------- running


def evaluate(tests: list[dict[str, Any]], ask: Callable[[dict[str, Any]], Any], *, threshold: float = 0.55,
             concurrency: int = 8, progress: Callable[[int, int], None] | None = None,
             prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None, trials: int = 1,
             breaker: H.Breaker | None = None) -> list[dict[str, Any]]:
    """Ask `ask(data)` (returns an object with .action, .raw, .latency_ms) for every test and trial
    on `concurrency` threads; records come back in the order of `tests`, trial by trial. Once
    `breaker` (the one the agent's requests report to) trips, the tests not yet asked are recorded
    unanswered without asking."""
    jobs = [(i, t) for t in range(max(1, trials)) for i in range(len(tests))]
    records: list[dict[str, Any] | None] = [None] * len(jobs)
    done = 0

    def one(j: int) -> int:
        i, trial = jobs[j]
        data = tests[i]
        if breaker is not None and breaker.tripped:
            action, raw, latency = R.outage(f"not asked: {breaker.tripped}"), "", 0
        else:
            reply = ask(prepare(data) if prepare else data)
            action, raw, latency = reply.action, reply.raw, reply.latency_ms
        records[j] = record_for(data, action, threshold=threshold, raw=raw, latency_ms=latency, trial=trial)
        return j

    with ThreadPoolExecutor(max(1, concurrency)) as pool:
        for _ in pool.map(one, range(len(jobs))):
            done += 1
            if progress:
                progress(done, len(jobs))
    return [r for r in records if r is not None]


def report(records: list[dict[str, Any]], *, bootstrap: int = 1000, seed: int = 0,
           max_error_share: float = H.DEFAULT_MAX_ERROR_SHARE, stopped: str = "") -> dict[str, Any]:
    """The seven metrics over the first trial, the run's health over every record, and pass^k /
    pass@k when there were several trials."""
    first = [r for r in records if not r.get("trial")]
    metrics = M.compute_metrics([outcome_of(r) for r in first], bootstrap=bootstrap, seed=seed)
    health = H.health_of((r["predicted_type"] for r in records), limit=max_error_share, stopped=stopped)
    out = {
        "status": "failed" if health.failed else "succeeded",
        "complete": health.complete,
        "reason": health.reason(),
        "errors": health.to_json(),
        "evaluated": len(first),
        "unanswered": sum(1 for r in first if r["predicted_type"] == M.FAILED),
        "unparseable": sum(1 for r in first if r["predicted_type"] == M.INVALID),
        "bootstrap": bootstrap,
        "metrics": M.metrics_to_json(metrics),
    }
    trials = 1 + max((int(r.get("trial") or 0) for r in records), default=0)
    if trials > 1:
        out["trials"] = T.trials_report([(r["test_id"], int(r.get("trial") or 0), outcome_of(r)) for r in records],
                                        trials, bootstrap=bootstrap, seed=seed)
    return out


def results_document(records: list[dict[str, Any]], summary: dict[str, Any], *, release: dict[str, Any],
                     agent: dict[str, Any], threshold: float, similarity: str, gates: list[dict[str, Any]],
                     elapsed: float) -> dict[str, Any]:
    return {
        "format": RESULTS_FORMAT, "release": release, "agent": agent, "similarity": similarity,
        "threshold": threshold, "elapsed_s": round(elapsed, 3), **summary,
        "gates": gates, "passed": summary.get("status") != "failed" and all(g["passed"] for g in gates),
        "tests": records,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }

"""Per-test downloads and the missed-API-calls table of a turn-level run."""
from __future__ import annotations

import json
from typing import Any

from django.db.models import Q

from evaluation import metrics as M
from evaluation.models import EvaluationRun, ResultState

RESULT_COLUMNS = ["test_id", "conversation_id", "position", "trial", "noise_kinds", "expected_type", "expected",
                  "predicted_type", "answer", "similarity", "reply_recalled", "reply_correct", "api_recalled",
                  "api_correct", "params_correct", "correct", "reason", "state", "latency_ms", "raw_reply",
                  "similarity_method", "threshold", "comparison"]


def _action_text(action: dict[str, Any]) -> str:
    if action.get("type") == M.REPLY:
        return str(action.get("content", ""))
    if action.get("type") == M.API_CALL:
        return f"{action.get('name')}({json.dumps(action.get('parameters') or {}, ensure_ascii=False, sort_keys=True)})"
    return ""


RESULT_VALUES = ("entry__test_id", "entry__conversation_id", "entry__position", "trial", "entry__data__noise_kinds",
                 "entry__data__expected", "predicted_type", "parsed", "similarity", "reply_recalled", "reply_correct",
                 "api_recalled", "api_correct", "params_correct", "correct", "error", "state", "latency_ms",
                 "raw_reply")


def result_rows_query(run: EvaluationRun):
    """The run's results in conversation order, trial by trial, as RESULT_VALUES tuples."""
    return (run.results.order_by("entry__conversation_id", "entry__position", "entry__test_id", "trial")
            .values_list(*RESULT_VALUES))


def result_row(run: EvaluationRun, values: tuple) -> dict[str, Any]:
    """One RESULT_VALUES tuple as a RESULT_COLUMNS dict, with how "correct" was decided (the file
    may travel without the run page) and the 0-based trial index."""
    (test_id, conv, pos, trial, noise, expected, ptype, parsed, sim, rr, rc, ar, ac, pc, correct, error, state,
     latency, raw) = values
    expected = expected or {}
    return {
        "test_id": test_id, "conversation_id": conv, "position": pos, "trial": trial,
        "noise_kinds": ",".join(noise or []),
        "expected_type": expected.get("type", ""), "expected": _action_text(expected),
        "predicted_type": ptype, "answer": _action_text(parsed or {}),
        "similarity": "" if sim is None else f"{sim:.4f}", "reply_recalled": int(rr), "reply_correct": int(rc),
        "api_recalled": int(ar), "api_correct": int(ac), "params_correct": int(pc), "correct": int(correct),
        "reason": error, "state": state, "latency_ms": latency, "raw_reply": raw,
        "similarity_method": run.similarity, "threshold": run.threshold, "comparison": run.comparison,
    }


def run_result_rows(run: EvaluationRun, chunk_size: int = 500):
    """One dict per test and trial of the run (RESULT_COLUMNS), in conversation order, for downloads."""
    for values in result_rows_query(run).iterator(chunk_size=chunk_size):
        yield result_row(run, values)


def api_confusions(run: EvaluationRun, limit: int = 20) -> list[dict[str, Any]]:
    """Where an API call was expected but the agent did something else: the expected API, what it
    did instead (another API, a reply, an unparseable answer), and how often; most frequent first."""
    from collections import Counter

    counts: Counter = Counter()
    for expected, ptype, parsed in (run.results.filter(state=ResultState.DONE, api_correct=False)
                                    .values_list("entry__data__expected", "predicted_type", "parsed")):
        if (expected or {}).get("type") != M.API_CALL:
            continue
        if ptype == M.API_CALL:
            instead = f"called {(parsed or {}).get('name')}"
        elif ptype == M.REPLY:
            instead = "replied instead"
        else:
            instead = "unparseable answer"
        counts[(str(expected.get("name")), instead)] += 1
    return [{"expected": e, "instead": i, "count": n} for (e, i), n in
            sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]


def pending_count(run: EvaluationRun) -> int:
    return run.results.filter(Q(state=ResultState.PENDING) | Q(state=ResultState.RUNNING)).count()

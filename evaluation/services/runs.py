"""Evaluation workflows: agents, runs on releases, one test at a time, reports and comparisons.

A run is created with one pending TestResult per release test. Celery "lanes" (at most
`run.concurrency` of them) each claim one pending result with a conditional update, ask the agent,
judge the answer and store it, and go on with the next pending test. The last lane to find
nothing left finishes the run: metrics with bootstrap confidence intervals and the breakdowns are
stored on the run. Cancel stops the lanes; resume puts unfinished and failed tests back to pending.

The LLM call happens outside any database transaction on purpose: SQLite runs in IMMEDIATE mode
and would hold the write lock for the whole call.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from curation.models import Release
from curation.releases.services import release_test_row
from evaluation import dialogue_actions as DA
from evaluation import metrics as M
from evaluation import reader as R
from evaluation import run_health as H
from evaluation import similarity as S
from evaluation.agent_kinds import lanes_for  # issue #18: an HTTP agent caps the run's lanes
from evaluation.models import Agent, AgentMode, EvaluationRun, ResultState, RunStatus, TestResult
from evaluation.services.agents import agent_answer
from evaluation.services.common import BOOTSTRAP_SAMPLES, EvaluationError
from evaluation.services.dialogue import agent_action_label, agent_state
from evaluation.services.lifecycle import (
    cancel_run,
    claim_pending,
    dispatch_lanes,
    fail_run,
    finish_run,
    resume_run,
    start_run,
)
from evaluation.services.reports import run_report
from generation.pipeline.dialogue_actions import answer_action
from projects.scoping import rows_to_write

MAX_TRIALS = 20
# The kinds whose sampling temperature the product sets; an HTTP agent samples as it does.
SAMPLED_BY_TEMPERATURE = (AgentMode.PROMPT, AgentMode.FUNCTIONS, AgentMode.OWN_PROMPT)


@transaction.atomic
def run_create(*, agent: Agent, release: Release, created_by=None, similarity: str = S.AUTO,
               threshold: float | None = None, concurrency: int | None = None, start: bool = True,
               comparison: str = M.EXACT, trials: int = 1, dst: bool = False,
               max_error_share: float = H.DEFAULT_MAX_ERROR_SHARE, action_labels: str = DA.RULES) -> EvaluationRun:
    """A queued run with one pending result per release test and trial; started by a worker after
    commit. `trials` > 1 repeats each test (pass^k): an LLM agent whose temperature we set needs
    temperature > 0; an HTTP agent is sampled as it is. `dst` also asks the agent for the
    dialogue state at each test. Above `max_error_share` of tests without a readable answer the
    run ends failed (evaluation/run_health.py). `action_labels` says where the predicted dialogue
    action comes from: the rules on the answer, or the agent's model asked for the label (ToolDial)."""
    scorer = S.get_scorer(similarity)  # raises when BERTScore is asked for but not installed
    if comparison not in M.COMPARISONS:
        raise EvaluationError(f"unknown comparison {comparison!r}; choose one of {', '.join(M.COMPARISONS)}")
    trials = int(trials or 1)
    if not 1 <= trials <= MAX_TRIALS:
        raise EvaluationError(f"trials must be between 1 and {MAX_TRIALS}, not {trials}")
    if trials > 1 and agent.mode in SAMPLED_BY_TEMPERATURE and agent.temperature <= 0:
        raise EvaluationError(f"repeated trials need an agent with temperature > 0: {agent.name} has "
                              f"{agent.temperature}, so every trial would give the same answer")
    if action_labels not in DA.ACTION_LABELS:
        raise EvaluationError(f"unknown action labels {action_labels!r}; choose one of {', '.join(DA.ACTION_LABELS)}")
    if action_labels == DA.MODEL and agent.mode == AgentMode.HTTP:
        raise EvaluationError(f"{agent.name} is an HTTP agent: it answers the protocol, not a question about the next "
                              "action; use the rules for its action labels")
    if not 0.0 <= float(max_error_share) <= 1.0:
        raise EvaluationError(f"the error share limit must lie in 0..1, not {max_error_share}")
    entry_ids = list(release.entries.values_list("pk", flat=True))
    if not entry_ids:
        raise EvaluationError(f"release {release} has no tests")
    if not agent.is_reference:
        from generation.llm import endpoint_configured

        if not endpoint_configured(agent.base_url or None):
            raise EvaluationError("no LLM endpoint: set OPENAI_BASE_URL or give the agent a base URL")
    run = EvaluationRun.objects.create(
        agent=agent, release=release, created_by=created_by, similarity=scorer.name,
        threshold=settings.BERTSCORE_THRESHOLD if threshold is None else threshold,
        concurrency=lanes_for(agent, concurrency or settings.LLM_MAX_CONCURRENCY), total=len(entry_ids) * trials,
        comparison=comparison, trials=trials, dst=bool(dst), max_error_share=float(max_error_share),
        action_labels=action_labels,
    )
    TestResult.objects.bulk_create([TestResult(run=run, entry_id=pk, trial=t) for t in range(trials)
                                    for pk in entry_ids], batch_size=500)
    if start:
        run_start(run_id=run.pk)
        run.refresh_from_db()
    return run


# Run lifecycle, shared by turn-level runs (TestResult rows, one per test) and session runs
# (SessionResult rows, one per conversation): both have `results` with a `state` column.


def _dispatch(run_id: int, lanes: int) -> None:
    from evaluation.tasks import evaluate_lane

    dispatch_lanes(evaluate_lane, run_id, lanes)


@transaction.atomic
def run_start(*, run_id: int, dispatch: bool = True) -> int:
    """queued -> running; enqueue the lanes after commit. Returns the number of lanes."""
    return start_run(EvaluationRun, run_id, _dispatch if dispatch else None)


@transaction.atomic
def run_cancel(*, run: EvaluationRun) -> EvaluationRun:
    return cancel_run(run)


@transaction.atomic
def run_resume(*, run: EvaluationRun, dispatch: bool = True) -> tuple[EvaluationRun, int]:
    """Failed or cancelled: retry unfinished and failed tests. Running: pick up tests whose lane
    died (stale claims). Returns (run, lanes dispatched)."""
    return resume_run(run, stale_calls=1, dispatch_fn=_dispatch if dispatch else None)


def _claim(run_id: int) -> TestResult | None | bool:
    return claim_pending(TestResult, run_id, related=("entry",))


def judge_answer(data: dict[str, Any], action: dict[str, Any], *, scorer: S.Scorer, threshold: float,
                 comparison: str = M.EXACT) -> M.Outcome:
    expected = data.get("expected") or {}
    sim = None
    if expected.get("type") == M.REPLY and action.get("type") == M.REPLY:
        sim = scorer.score([action["content"]], [str(expected.get("content", ""))])[0]
    return M.judge(expected, action, similarity=sim, threshold=threshold, comparison=comparison)


def judged_fields(outcome: M.Outcome, action: dict[str, Any]) -> dict[str, Any]:
    """The TestResult columns that judging an answer sets (state DONE)."""
    reason = outcome.reason  # why it is wrong, and the reader's note
    return {
        "state": ResultState.DONE, "predicted_type": outcome.predicted_type,
        "reply_recalled": outcome.reply_recalled, "reply_correct": outcome.reply_correct,
        "api_recalled": outcome.api_recalled, "api_correct": outcome.api_correct,
        "params_correct": outcome.params_correct, "correct": outcome.correct,
        "similarity": outcome.similarity, "error": reason,
    }


def run_lane(*, run_id: int) -> int:
    """Evaluate pending tests until none is left (or the run stops). Returns how many steps ran."""
    run = EvaluationRun.objects.select_related("agent").get(pk=run_id)
    if run.is_rejudgement:
        from evaluation.services.rejudge import rejudge_execute  # rejudge builds on this module

        return rejudge_execute(run_id=run_id)
    steps = 0
    while run_step(run_id=run_id, run=run):
        steps += 1
    return steps


def run_step(*, run_id: int, run: EvaluationRun | None = None) -> bool:
    """Evaluate one pending test of a running run. True: call again (more work may be left).

    `run` may be passed in by a lane that already holds the row; its status is re-read anyway,
    so a cancel stops the lane at its next step."""
    from generation.llm import LLMUnavailable

    status = EvaluationRun.objects.filter(pk=run_id).values_list("status", flat=True).first()
    if status != RunStatus.RUNNING:
        return False
    if run is None:
        run = EvaluationRun.objects.select_related("agent").get(pk=run_id)
    result = _claim(run_id)
    if result is False:
        return True
    if result is None:
        run_finish_if_done(run_id=run_id)
        return False
    data = release_test_row(result.entry)
    key = f"run{run.pk}:test{result.entry.test_id}" + (f":trial{result.trial}" if result.trial else "")
    try:
        fields = _answer_fields(run, result, data, key)
    except LLMUnavailable as exc:
        TestResult.objects.filter(pk=result.pk).update(state=ResultState.PENDING, claimed_at=None)
        run_fail(run_id=run_id, error=str(exc))
        return False
    # Only the lane holding the claim writes; a stale lane that comes back late is ignored (the
    # conditions in the UPDATE's own WHERE: projects.scoping.rows_to_write). The run's `done`
    # counter is set when the run finishes (pages count results while it runs), so lanes never
    # queue on the run row.
    rows_to_write(TestResult).filter(pk=result.pk, state=ResultState.RUNNING,
                                     claimed_at=result.claimed_at).update(finished_at=timezone.now(), **fields)
    if fields["state"] == ResultState.FAILED and _breaker_tripped(run_id):
        return False
    return True


def _answer_fields(run: EvaluationRun, result: TestResult, data: dict[str, Any], key: str) -> dict[str, Any]:
    """Ask the agent and judge its answer: the result's columns. No answer (a failed LLM call, an
    HTTP outage) is a FAILED result, unanswered and wrong; resume retries it. Raises LLMUnavailable."""
    from generation.llm import LLMFailed

    try:
        answer = agent_answer(run.agent, data, key=key, release_id=run.release_id)
        if R.is_outage(answer.action):
            return {"state": ResultState.FAILED, "error": str(answer.action.get("reason"))[:2000],
                    "parsed": answer.action, "raw_reply": answer.raw, "latency_ms": answer.latency_ms}
        outcome = judge_answer(data, answer.action, scorer=S.get_scorer(run.similarity), threshold=run.threshold,
                               comparison=run.comparison)
    except (LLMFailed, S.SimilarityUnavailable) as exc:
        reason = f"call failed: {exc}"[:2000]
        return {"state": ResultState.FAILED, "error": reason, "parsed": R.outage(reason),
                "llm_call_id": getattr(exc, "call_id", None)}
    fields = {"raw_reply": answer.raw, "parsed": answer.action, "latency_ms": answer.latency_ms,
              "llm_call_id": answer.call_id, **judged_fields(outcome, answer.action),
              "predicted_action": answer_action(data.get("context") or [], answer.action)}
    if run.action_labels == DA.MODEL:
        try:
            fields["predicted_action"] = agent_action_label(run.agent, result.entry, key=key)
        except LLMFailed:  # the answer was given; its label could not be asked: wrong
            fields["predicted_action"] = DA.FAILED
    if run.dst:
        try:
            fields["predicted_state"] = agent_state(run.agent, result.entry, key=key)
        except LLMFailed as exc:  # the action was answered; the state is missing (wrong)
            fields["predicted_state"] = {"invalid": f"call failed: {exc}"[:500]}
    return fields


def _breaker_tripped(run_id: int, after: int = H.BREAKER_AFTER) -> bool:
    """The circuit breaker: when the run's last `after` finished tests all got no answer, fail the
    run (its lanes stop at their next step; resume retries). Across worker processes, since it
    reads the results."""
    recent = list(TestResult.objects.filter(run_id=run_id, state__in=[ResultState.DONE, ResultState.FAILED])
                  .order_by("-finished_at", "-id").values_list("state", "error")[:after])
    if len(recent) < after or any(state != ResultState.FAILED for state, _ in recent):
        return False
    run_fail(run_id=run_id, error=H.breaker_message(after, recent[0][1]) + "; the tests not reached count as "
             "unanswered; resume to retry them")
    return True


@transaction.atomic
def run_fail(*, run_id: int, error: str) -> None:
    fail_run(EvaluationRun, run_id, error)


def run_finish_if_done(*, run_id: int) -> bool:
    """When no test is pending or in flight: store the report and close the run (idempotent)."""
    return finish_run(EvaluationRun, run_id, report_fn=lambda run: run_report(run, bootstrap=BOOTSTRAP_SAMPLES),
                      done_key="evaluated",
                      failed_message="{failed} test(s) got no answer (the agent could not be reached or its call "
                                     "failed): they count as wrong in the metrics, which are incomplete; resume to "
                                     "retry them.")


def run_execute_inline(*, run: EvaluationRun, workers: int | None = None) -> EvaluationRun:
    """Run every pending test in this process (command line, benchmark, tests): the same steps
    the Celery lanes run, on `workers` threads."""
    run.refresh_from_db()
    if run.status == RunStatus.QUEUED:
        run_start(run_id=run.pk, dispatch=False)
    elif run.status != RunStatus.RUNNING:
        run, _ = run_resume(run=run, dispatch=False)
    workers = workers or run.concurrency

    def lane() -> None:
        try:
            run_lane(run_id=run.pk)
        finally:
            if threading.current_thread() is not threading.main_thread():
                connection.close()

    if workers <= 1:
        lane()
    else:
        with ThreadPoolExecutor(workers) as pool:
            for f in [pool.submit(lane) for _ in range(workers)]:
                f.result()
        close_old_connections()
    run_finish_if_done(run_id=run.pk)
    run.refresh_from_db()
    return run

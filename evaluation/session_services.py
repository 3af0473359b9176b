"""Session runs: an agent converses with a simulated user, one session per conversation of a
release, and an LLM judge counts the goals reached (FlowBench's session level).

The lifecycle follows evaluation runs: one pending SessionResult per conversation, created up
front; at most `concurrency` Celery lanes claim them with a conditional update; a session is
simulated and judged outside any transaction, then stored by the lane that holds the claim; the
last lane finishes the run. Cancel stops the lanes; resume retries failed and unfinished sessions.
The simulated user and the judge use the studio's own endpoint (OPENAI_BASE_URL); the agent
uses its own, as in a turn-level run.
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from curation.models import Release
from curation.releases.services import release_test_rows
from evaluation import metrics as M
from evaluation import reader as R
from evaluation import sessions as SS
from evaluation.models import Agent, ResultState, RunStatus, SessionResult, SessionRun
from evaluation.services import (
    BOOTSTRAP_SAMPLES,
    EvaluationError,
    agent_answer,
    cancel_run,
    claim_pending,
    dispatch_lanes,
    fail_run,
    finish_run,
    resume_run,
    start_run,
)
from projects.scoping import rows_to_write

USER_STAGE = "session-user"
JUDGE_STAGE = "session-judge"
JUDGE_ATTEMPTS = 2  # a malformed verdict is recorded and the judge asked once more


def _tasks_for(release: Release, limit: int | None) -> tuple[list[tuple[int, dict]], list[int]]:
    """[(conversation id, task JSON)] for the release's conversations (first `limit` by id), and
    the ids of conversations that cannot be a session (no user message)."""
    rows: dict[int, list[dict]] = {}
    for _pk, conv, _pos, data in release_test_rows(release):
        rows.setdefault(conv, []).append(data)
    tasks, skipped = [], []
    for conv in sorted(rows)[:limit] if limit else sorted(rows):
        try:
            tasks.append((conv, SS.session_task(rows[conv]).to_json()))
        except ValueError:
            skipped.append(conv)
    return tasks, skipped


@transaction.atomic
def session_run_create(*, agent: Agent, release: Release, created_by=None, max_turns: int = 15,
                       concurrency: int | None = None, user_model: str = "", judge_model: str = "",
                       limit: int | None = None, start: bool = True) -> SessionRun:
    from django.conf import settings

    from generation.llm import endpoint_configured

    if agent.is_reference:
        raise EvaluationError(f"{agent.name} answers single tests from their expected output; a session needs an "
                              "LLM agent")
    if not endpoint_configured(None):
        raise EvaluationError("no LLM endpoint for the simulated user and the judge: set OPENAI_BASE_URL")
    if not endpoint_configured(agent.base_url or None):
        raise EvaluationError("no LLM endpoint for the agent: set OPENAI_BASE_URL or give the agent a base URL")
    if not 1 <= max_turns <= 50:
        raise EvaluationError("max turns must be between 1 and 50")
    tasks, skipped = _tasks_for(release, limit)
    if not tasks:
        raise EvaluationError(f"release {release} has no conversation with a user message")
    run = SessionRun.objects.create(
        agent=agent, release=release, created_by=created_by, max_turns=max_turns,
        concurrency=concurrency or settings.LLM_MAX_CONCURRENCY, user_model=user_model.strip(),
        judge_model=judge_model.strip(), total=len(tasks),
        metrics={"skipped_conversations": skipped} if skipped else {})
    SessionResult.objects.bulk_create([SessionResult(run=run, conversation_id=conv, task=task) for conv, task in tasks],
                                      batch_size=500)
    if start:
        session_run_start(run_id=run.pk)
        run.refresh_from_db()
    return run


def _dispatch(run_id: int, lanes: int) -> None:
    from evaluation.tasks import session_lane

    dispatch_lanes(session_lane, run_id, lanes)


@transaction.atomic
def session_run_start(*, run_id: int, dispatch: bool = True) -> int:
    return start_run(SessionRun, run_id, _dispatch if dispatch else None)


@transaction.atomic
def session_run_cancel(*, run: SessionRun) -> SessionRun:
    return cancel_run(run)


@transaction.atomic
def session_run_resume(*, run: SessionRun, dispatch: bool = True) -> tuple[SessionRun, int]:
    # A session makes many calls: its claim is stale only after all of them could have run.
    return resume_run(run, stale_calls=run.max_turns * (1 + SS.MAX_AGENT_STEPS) + JUDGE_ATTEMPTS,
                      dispatch_fn=_dispatch if dispatch else None)


@transaction.atomic
def _fail(run_id: int, error: str) -> None:
    fail_run(SessionRun, run_id, error)


def _task(data: dict[str, Any]) -> SS.SessionTask:
    calls = [SS.Call(c["name"], c.get("parameters") or {}, c.get("output")) for c in data.get("calls") or []]
    return SS.SessionTask(conversation_id=data.get("conversation_id"), intent=data.get("intent", ""),
                          issue=data.get("issue", ""), user_lines=list(data.get("user_lines") or []),
                          calls=calls, goals=list(data.get("goals") or []),
                          required={str(k): list(v) for k, v in (data.get("required") or {}).items()})


def simulate_session(run: SessionRun, task: SS.SessionTask, data: dict[str, Any], *, key: str) -> dict[str, Any]:
    """Converse until the simulated user ends or max_turns user turns have passed, then judge.
    Raises LLMUnavailable / LLMFailed, and JudgeOutputError when every verdict was malformed."""
    from generation.llm import LLMFailed, chat

    history: list[dict[str, Any]] = []
    predicted: list[SS.Call] = []
    notes: list[str] = []
    used = [False] * len(task.calls)
    api_names = [a.get("name", "") for a in data.get("apis") or []]
    if not task.required:  # a task stored before required parameters were recorded
        task.required = SS.required_parameters(data.get("apis"))
    turns, ended_by = 0, f"reached the limit of {run.max_turns} user turns"
    for turn in range(run.max_turns):
        said = chat(stage=USER_STAGE, messages=SS.user_messages(task, history), model=run.user_model or None,
                    temperature=0.0, key=f"{key}:user{turn}", use_cache=False).content
        message, why = SS.parse_user_message(said)
        if message is None:
            ended_by = why
            break
        history.append({"role": "user", "content": message})
        turns += 1
        for step in range(SS.MAX_AGENT_STEPS):
            answer = agent_answer(run.agent, {**data, "context": list(history)}, key=f"{key}:t{turn}s{step}",
                                  release_id=run.release_id)
            action = answer.action  # read by evaluation/reader.py, as in turn-level runs
            if R.is_outage(action):  # no answer: the session failed (resume retries it), not a turn
                raise LLMFailed(f"the agent gave no answer: {action.get('reason')}")
            if action.get("type") == M.REPLY:
                history.append({"role": "assistant", "content": str(action.get("content", ""))})
                break
            if action.get("type") == M.API_CALL:
                call = SS.Call(str(action.get("name")), action.get("parameters") or {})
                output = SS.environment(task, used, call, api_names)
                predicted.append(call)
                history.append({"role": "api", "content": call.text()})
                history.append({"role": "api_output", "content": json.dumps(output, ensure_ascii=False)})
                continue
            notes.append(f"turn {turn + 1}: unparseable answer ({action.get('reason', 'unknown format')})")
            history.append({"role": "assistant", "content": answer.raw[:2000]})
            break
        else:
            notes.append(f"turn {turn + 1}: {SS.MAX_AGENT_STEPS} API calls without a reply")
    verdict, raw = None, ""
    for attempt in range(JUDGE_ATTEMPTS):
        raw = chat(stage=JUDGE_STAGE, messages=SS.judge_messages(task, str(data.get("procedure", "")), history),
                   model=run.judge_model or None, temperature=0.0, key=f"{key}:judge{attempt}", use_cache=False).content or ""
        try:
            verdict = SS.parse_judge(raw, len(task.goals))
            break
        except SS.JudgeOutputError as exc:
            notes.append(f"judge answer discarded: {exc}")
            if attempt == JUDGE_ATTEMPTS - 1:
                raise
    success = verdict.success
    if turns >= run.max_turns and ended_by.startswith("reached"):
        success = False  # FlowBench: a task not finished within the turn limit is a failure
        notes.append(f"the session reached {run.max_turns} user turns: counted as a failure")
    return {
        "transcript": history, "predicted_calls": [{"name": c.name, "parameters": c.parameters} for c in predicted],
        "success": success, "total_goals": verdict.total, "accomplished": verdict.accomplished,
        "turns": turns, "tools": SS.tool_counts(task.calls, predicted, task.required), "ended_by": ended_by,
        "judge_reason": verdict.reason, "judge_raw": raw, "notes": notes,
    }


def session_run_lane(*, run_id: int) -> int:
    steps = 0
    while session_run_step(run_id=run_id):
        steps += 1
    return steps


def session_run_step(*, run_id: int) -> bool:
    """Simulate and judge one pending session. True: call again."""
    from generation.llm import LLMFailed, LLMUnavailable

    run = SessionRun.objects.select_related("agent").filter(pk=run_id).first()
    if run is None or run.status != RunStatus.RUNNING:
        return False
    result = claim_pending(SessionResult, run_id)
    if result is False:
        return True
    if result is None:
        session_run_finish_if_done(run_id=run_id)
        return False
    data = next((row for *_ids, row in release_test_rows(run.release_id, conversation_ids=[result.conversation_id])),
                {})
    data = {k: v for k, v in data.items() if k not in ("context", "expected")}
    try:
        fields = simulate_session(run, _task(result.task), data, key=f"sessions{run.pk}:conv{result.conversation_id}")
        fields["state"] = ResultState.DONE
        fields["error"] = ""
    except LLMUnavailable as exc:
        SessionResult.objects.filter(pk=result.pk).update(state=ResultState.PENDING, claimed_at=None)
        _fail(run_id, str(exc))
        return False
    except (LLMFailed, SS.JudgeOutputError) as exc:
        fields = {"state": ResultState.FAILED, "error": f"{type(exc).__name__}: {exc}"[:2000]}
    rows_to_write(SessionResult).filter(pk=result.pk, state=ResultState.RUNNING, claimed_at=result.claimed_at).update(
        finished_at=timezone.now(), **fields)
    return True


def session_outcomes(run: SessionRun) -> list[SS.SessionOutcome]:
    return [SS.SessionOutcome(success=s, total_goals=n, accomplished=k, turns=t, tools=tools)
            for s, n, k, t, tools in run.results.filter(state=ResultState.DONE).values_list(
                "success", "total_goals", "accomplished", "turns", "tools")]


def session_report(run: SessionRun, *, bootstrap: int = 0) -> dict[str, Any]:
    outcomes = session_outcomes(run)
    states = dict(run.results.values_list("state").annotate(n=Count("id")).values_list("state", "n"))
    ended = Counter(run.results.filter(state=ResultState.DONE).values_list("ended_by", flat=True))
    report = {
        "sessions": len(outcomes), "failed": states.get(ResultState.FAILED, 0), "bootstrap": bootstrap,
        "metrics": SS.session_metrics(outcomes, bootstrap=bootstrap, seed=run.pk or 0),
        "ended_by": dict(ended.most_common()),
        "unparseable_answers": sum(len([n for n in notes if "unparseable" in n])
                                   for notes in run.results.values_list("notes", flat=True)),
    }
    if (run.metrics or {}).get("skipped_conversations"):
        report["skipped_conversations"] = run.metrics["skipped_conversations"]
    return report


def session_run_finish_if_done(*, run_id: int) -> bool:
    return finish_run(SessionRun, run_id, report_fn=lambda run: session_report(run, bootstrap=BOOTSTRAP_SAMPLES),
                      done_key="sessions",
                      failed_message="{failed} session(s) could not be completed; resume to retry them.")


def session_run_execute_inline(*, run: SessionRun) -> SessionRun:
    """Every pending session in this process, on one thread (command line and tests)."""
    run.refresh_from_db()
    if run.status == RunStatus.QUEUED:
        session_run_start(run_id=run.pk, dispatch=False)
    elif run.status != RunStatus.RUNNING:
        run, _ = session_run_resume(run=run, dispatch=False)
    session_run_lane(run_id=run.pk)
    session_run_finish_if_done(run_id=run.pk)
    run.refresh_from_db()
    return run


def session_current_report(run: SessionRun) -> dict[str, Any]:
    if run.metrics and run.metrics.get("metrics") and not run.is_active:
        return run.metrics
    return session_report(run, bootstrap=0)


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

import json
import os
import random
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import Count, F, Q
from django.utils import timezone

import webhooks
from curation.models import Release, ReleaseTest
from evaluation import metrics as M
from evaluation import similarity as S
from evaluation.agents import (
    PROMPT_TEMPLATE,
    PROMPT_VERSION,
    build_messages,
    parse_function_answer,
    parse_json_answer,
    reference_action,
    tools_from_apis,
)
from evaluation.models import Agent, AgentMode, EvaluationRun, ResultState, RunStatus, TestResult

LLM_STAGE = "evaluation"
BOOTSTRAP_SAMPLES = 1000
REFERENCE_AGENTS = [
    ("Reference: gold", AgentMode.GOLD, "Answers the expected output of every test: 100 % everywhere."),
    ("Reference: always reply", AgentMode.ALWAYS_REPLY, "Always sends the same clarifying message."),
    ("Reference: always the first API", AgentMode.FIRST_API, "Always calls the first API of the test, without parameters."),
]


class EvaluationError(Exception):
    pass


# --------------------------------------------------------------------------- agents


@transaction.atomic
def reference_agents_ensure() -> list[Agent]:
    agents = []
    for name, mode, description in REFERENCE_AGENTS:
        agent, _ = Agent.objects.get_or_create(name=name, defaults={"mode": mode, "description": description,
                                                                   "api_key_env": ""})
        agents.append(agent)
    return agents


# Only variables named like API keys may be read: an agent's key setting must never become a
# way to send SECRET_KEY or DATABASE_URL to an endpoint of the researcher's choosing.
KEY_VARIABLE = re.compile(r"^[A-Z][A-Z0-9_]*_API_KEY$")


@transaction.atomic
def agent_create(*, name: str, mode: str = AgentMode.PROMPT, knowledge: str = Agent.Knowledge.PROCEDURE,
                 base_url: str = "", api_key_env: str = "OPENAI_API_KEY", model: str = "",
                 temperature: float = 0.0, description: str = "") -> Agent:
    api_key_env = (api_key_env or "").strip()
    if api_key_env and not KEY_VARIABLE.match(api_key_env):
        raise EvaluationError("the API key setting is the NAME of an environment variable ending in _API_KEY, "
                              "e.g. OPENAI_API_KEY")
    return Agent.objects.create(name=name, mode=mode, knowledge=knowledge, base_url=base_url.strip(),
                                api_key_env=api_key_env, model=model.strip(), temperature=temperature,
                                description=description)


def agent_api_key(agent: Agent) -> str | None:
    """The agent's key, read from the environment variable it names; None means the default
    key (OPENAI_API_KEY from settings). The default key is sent only to the default endpoint."""
    name = (agent.api_key_env or "").strip()
    custom = bool(agent.base_url) and agent.base_url.rstrip("/") != (settings.OPENAI_BASE_URL or "").rstrip("/")
    if not name or name == "OPENAI_API_KEY":
        return "" if custom else None
    if not KEY_VARIABLE.match(name):
        return ""
    return os.environ.get(name, "")


# A one-test probe of an agent: a greeting that the A.8 prompt should answer with a reply.
CHECK_TEST: dict[str, Any] = {
    "procedure": "Greet the customer, then ask for the order id before looking the order up.",
    "apis": [{"name": "get_order_details", "desc": "Look an order up by its id.",
              "params": [{"name": "order_id", "type": "int", "required": True}],
              "output": {"name": "order", "type": "dict"}}],
    "context": [{"role": "user", "content": "Hello, my order has not arrived."}],
    "expected": {"type": "reply", "content": "Could you give me your order id?"},
}


def agent_check(agent: Agent) -> tuple[bool, str]:
    """Send the agent one probe test through the same prompt, mode and parser as a run and say
    what came back: (ok, message). The call is logged like any other (stage "evaluation")."""
    from generation.llm import LLMFailed, LLMUnavailable

    if agent.is_reference:
        return True, f"{agent.name} is a built-in reference agent: it needs no endpoint."
    try:
        answer = agent_answer(agent, CHECK_TEST, key=f"check:agent{agent.pk}:{timezone.now().isoformat()}")
    except LLMUnavailable as exc:
        return False, f"{agent.name}: {exc}"
    except LLMFailed as exc:
        return False, f"{agent.name}: the endpoint failed after retries: {exc}"
    kind = answer.action.get("type")
    if kind == M.REPLY:
        said = str(answer.action.get("content", ""))
        return True, (f"{agent.name} answered in {answer.latency_ms} ms with a reply: "
                      f"“{said[:200]}{'…' if len(said) > 200 else ''}”")
    if kind == M.API_CALL:
        return True, (f"{agent.name} answered in {answer.latency_ms} ms with a call to {answer.action.get('name')} "
                      f"(a reply asking for the order id was expected, but the format is understood)")
    return False, (f"{agent.name} answered in {answer.latency_ms} ms, but the answer could not be parsed: "
                   f"{answer.action.get('reason', 'unknown format')}")


# --------------------------------------------------------------------------- runs


@transaction.atomic
def run_create(*, agent: Agent, release: Release, created_by=None, similarity: str = S.AUTO,
               threshold: float | None = None, concurrency: int | None = None, start: bool = True) -> EvaluationRun:
    """A queued run with one pending result per release test; started by a worker after commit."""
    scorer = S.get_scorer(similarity)  # raises when BERTScore is asked for but not installed
    entry_ids = list(release.entries.values_list("pk", flat=True))
    if not entry_ids:
        raise EvaluationError(f"release {release} has no tests")
    if not agent.is_reference:
        from generation.llm import endpoint_configured

        if not endpoint_configured(agent.base_url or None):
            raise EvaluationError("no LLM endpoint: set OPENAI_BASE_URL or give the agent a base URL")
    from evaluation.agent_kinds import lanes_for  # issue #18: an HTTP agent caps the run's lanes

    run = EvaluationRun.objects.create(
        agent=agent, release=release, created_by=created_by, similarity=scorer.name,
        threshold=settings.BERTSCORE_THRESHOLD if threshold is None else threshold,
        concurrency=lanes_for(agent, concurrency or settings.LLM_MAX_CONCURRENCY), total=len(entry_ids),
    )
    TestResult.objects.bulk_create([TestResult(run=run, entry_id=pk) for pk in entry_ids], batch_size=500)
    if start:
        run_start(run_id=run.pk)
        run.refresh_from_db()
    return run


# Run lifecycle, shared by turn-level runs (TestResult rows, one per test) and session runs
# (SessionResult rows, one per conversation): both have `results` with a `state` column.


def lanes_to_dispatch(run) -> int:
    pending = run.results.filter(state=ResultState.PENDING).count()
    return max(1, min(run.concurrency, pending)) if pending else 1


def dispatch_lanes(task, run_id: int, lanes: int) -> None:
    """Enqueue `lanes` copies of the Celery lane task once the transaction commits."""

    def send() -> None:
        for _ in range(lanes):
            task.delay(run_id)

    transaction.on_commit(send)


def _dispatch(run_id: int, lanes: int) -> None:
    from evaluation.tasks import evaluate_lane

    dispatch_lanes(evaluate_lane, run_id, lanes)


def start_run(model, run_id: int, dispatch_fn) -> int:
    """queued -> running; `dispatch_fn(run_id, lanes)` after commit. Returns the number of lanes."""
    run = model.objects.select_for_update().get(pk=run_id)
    if run.status != RunStatus.QUEUED:
        return 0  # already started: its lanes are out
    run.check_transition(RunStatus.RUNNING)
    run.status = RunStatus.RUNNING
    run.started_at = timezone.now()
    run.save(update_fields=["status", "started_at"])
    lanes = lanes_to_dispatch(run)
    if dispatch_fn:
        dispatch_fn(run.pk, lanes)
    return lanes


@transaction.atomic
def run_start(*, run_id: int, dispatch: bool = True) -> int:
    """queued -> running; enqueue the lanes after commit. Returns the number of lanes."""
    return start_run(EvaluationRun, run_id, _dispatch if dispatch else None)


def cancel_run(run):
    run = type(run).objects.select_for_update().get(pk=run.pk)
    run.check_transition(RunStatus.CANCELLED)
    run.status = RunStatus.CANCELLED
    run.finished_at = timezone.now()
    run.done = run.results.filter(state=ResultState.DONE).count()
    run.save(update_fields=["status", "finished_at", "done"])
    return run


@transaction.atomic
def run_cancel(*, run: EvaluationRun) -> EvaluationRun:
    return cancel_run(run)


def stale_before(calls: int = 1) -> Any:
    """A claim older than this belongs to a lane that died (`calls` whole calls with all their
    retries take less)."""
    budget = settings.OPENAI_TIMEOUT * (settings.LLM_MAX_RETRIES + 1) * calls + 120
    return timezone.now() - timedelta(seconds=budget)


def resume_run(run, *, stale_calls: int, dispatch_fn) -> tuple[Any, int]:
    """Failed or cancelled: retry unfinished and failed items. Running: pick up items whose lane
    died (claims older than `stale_calls` calls). Returns (run, lanes dispatched)."""
    run = type(run).objects.select_for_update().get(pk=run.pk)
    if run.status == RunStatus.RUNNING:
        run.results.filter(state=ResultState.RUNNING, claimed_at__lt=stale_before(stale_calls)).update(
            state=ResultState.PENDING, claimed_at=None)
    else:
        run.check_transition(RunStatus.RUNNING)
        run.results.filter(state__in=[ResultState.RUNNING, ResultState.FAILED]).update(
            state=ResultState.PENDING, claimed_at=None)
        run.status = RunStatus.RUNNING
        run.error = ""
        run.finished_at = None
        run.started_at = run.started_at or timezone.now()
        run.save(update_fields=["status", "error", "finished_at", "started_at"])
    lanes = lanes_to_dispatch(run)
    if dispatch_fn:
        dispatch_fn(run.pk, lanes)
    return run, lanes


@transaction.atomic
def run_resume(*, run: EvaluationRun, dispatch: bool = True) -> tuple[EvaluationRun, int]:
    """Failed or cancelled: retry unfinished and failed tests. Running: pick up tests whose lane
    died (stale claims). Returns (run, lanes dispatched)."""
    return resume_run(run, stale_calls=1, dispatch_fn=_dispatch if dispatch else None)


def claim_pending(model, run_id: int, *, related: tuple[str, ...] = ()):
    """Claim one pending result row of `model` (fetched with `related` joined). None: nothing
    pending. False: lost every race; try again later."""
    for _ in range(20):
        candidates = list(model.objects.filter(run_id=run_id, state=ResultState.PENDING)
                          .order_by("id").values_list("pk", flat=True)[:8])
        if not candidates:
            return None
        pk = random.choice(candidates)  # spread concurrent lanes over different rows
        won = model.objects.filter(pk=pk, state=ResultState.PENDING).update(
            state=ResultState.RUNNING, claimed_at=timezone.now(), attempts=F("attempts") + 1)
        if won == 1:
            return model.objects.select_related(*related).get(pk=pk)
    return False


def _claim(run_id: int) -> TestResult | None | bool:
    return claim_pending(TestResult, run_id, related=("entry",))


@dataclass
class Answer:
    action: dict[str, Any]
    raw: str
    latency_ms: int = 0
    call_id: int | None = None


def with_workflow(agent: Agent, data: dict[str, Any]) -> dict[str, Any]:
    """For Mermaid / pseudo-code knowledge: add the flowgraph's graph JSON when the release row
    names only its flowgraph_id (release rows do not copy the graph). Without it the agent gets
    the procedure text, and the prompt says so by its tag."""
    if agent.knowledge == Agent.Knowledge.PROCEDURE or agent.is_reference:
        return data
    if isinstance(data.get("flowgraph"), dict) or not data.get("flowgraph_id"):
        return data
    from generation.models import Flowgraph

    graph = Flowgraph.objects.filter(pk=int(data["flowgraph_id"])).values_list("data", flat=True).first() or {}
    return {**data, "flowgraph": graph} if graph.get("nodes") else data


def agent_answer(agent: Agent, data: dict[str, Any], *, key: str = "", release_id: int | None = None) -> Answer:
    """Ask the agent for its next action on one test (raises LLMUnavailable / LLMFailed)."""
    data = with_workflow(agent, data)
    if agent.mode in (AgentMode.HTTP, AgentMode.OWN_PROMPT):  # issue #18: your own agent
        from evaluation import agent_kinds

        return agent_kinds.answer(agent, data, key=key, release_id=release_id)
    if agent.is_reference:
        action = reference_action(agent.mode, data)
        return Answer(action=action, raw=json.dumps(action, ensure_ascii=False))
    from generation.llm import chat

    functions = agent.mode == AgentMode.FUNCTIONS
    result = chat(
        stage=LLM_STAGE,
        messages=build_messages(data, knowledge=agent.knowledge, functions=functions),
        model=agent.model or settings.EVALUATION_MODEL,
        temperature=agent.temperature,
        tools=tools_from_apis(data.get("apis") or []) if functions else None,
        key=key, template=PROMPT_TEMPLATE, template_version=PROMPT_VERSION,
        base_url=agent.base_url or None, api_key=agent_api_key(agent),
        # A re-evaluation asks the model again: cached answers would hide its variance.
        use_cache=False,
    )
    if functions:
        action = parse_function_answer(result.content, result.tool_calls)
        raw = result.content or ""
        if result.tool_calls:
            raw = json.dumps({"content": result.content, "tool_calls": result.tool_calls}, ensure_ascii=False)
    else:
        action = parse_json_answer(result.content)
        raw = result.content or ""
    return Answer(action=action, raw=raw, latency_ms=result.latency_ms, call_id=result.call_id)


def judge_answer(data: dict[str, Any], action: dict[str, Any], *, scorer: S.Scorer, threshold: float) -> M.Outcome:
    expected = data.get("expected") or {}
    sim = None
    if expected.get("type") == M.REPLY and action.get("type") == M.REPLY:
        sim = scorer.score([action["content"]], [str(expected.get("content", ""))])[0]
    return M.judge(expected, action, similarity=sim, threshold=threshold)


def judged_fields(outcome: M.Outcome, action: dict[str, Any]) -> dict[str, Any]:
    """The TestResult columns that judging an answer sets (state DONE)."""
    reason = outcome.reason
    if action.get("note"):
        reason = (reason + "; " if reason else "") + action["note"]
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
        return rejudge_execute(run_id=run_id)
    steps = 0
    while run_step(run_id=run_id, run=run):
        steps += 1
    return steps


def run_step(*, run_id: int, run: EvaluationRun | None = None) -> bool:
    """Evaluate one pending test of a running run. True: call again (more work may be left).

    `run` may be passed in by a lane that already holds the row; its status is re-read anyway,
    so a cancel stops the lane at its next step."""
    from generation.llm import LLMFailed, LLMUnavailable

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
    data = result.entry.data or {}
    key = f"run{run.pk}:test{result.entry.test_id}"
    fields: dict[str, Any]
    try:
        answer = agent_answer(run.agent, data, key=key, release_id=run.release_id)
        outcome = judge_answer(data, answer.action, scorer=S.get_scorer(run.similarity), threshold=run.threshold)
    except LLMUnavailable as exc:
        TestResult.objects.filter(pk=result.pk).update(state=ResultState.PENDING, claimed_at=None)
        run_fail(run_id=run_id, error=str(exc))
        return False
    except (LLMFailed, S.SimilarityUnavailable) as exc:
        fields = {"state": ResultState.FAILED, "error": f"call failed: {exc}"[:2000],
                  "llm_call_id": getattr(exc, "call_id", None)}
    else:
        fields = {"raw_reply": answer.raw, "parsed": answer.action, "latency_ms": answer.latency_ms,
                  "llm_call_id": answer.call_id, **judged_fields(outcome, answer.action)}
    # Only the lane holding the claim writes; a stale lane that comes back late is ignored. The
    # run's `done` counter is set when the run finishes (pages count results while it runs), so
    # lanes never queue on the run row.
    TestResult.objects.filter(pk=result.pk, state=ResultState.RUNNING,
                              claimed_at=result.claimed_at).update(finished_at=timezone.now(), **fields)
    return True


def fail_run(model, run_id: int, error: str) -> None:
    run = model.objects.select_for_update().get(pk=run_id)
    if run.can_move_to(RunStatus.FAILED):
        run.status = RunStatus.FAILED
        run.error = error[:4000]
        run.finished_at = timezone.now()
        run.done = run.results.filter(state=ResultState.DONE).count()
        run.save(update_fields=["status", "error", "finished_at", "done"])
        webhooks.emit("evaluation.finished", **_finished_event(run, run.metrics or {}))


@transaction.atomic
def run_fail(*, run_id: int, error: str) -> None:
    fail_run(EvaluationRun, run_id, error)


def finish_run(model, run_id: int, *, report_fn, done_key: str, failed_message: str) -> bool:
    """When no result is pending or in flight: store the report (`report_fn(run)`, with `failed`
    and `done_key` counts) and close the run, failed if any result failed (idempotent)."""
    run = model.objects.get(pk=run_id)
    if run.status != RunStatus.RUNNING or run.results.filter(
            state__in=[ResultState.PENDING, ResultState.RUNNING]).exists():
        return False
    report = report_fn(run)
    with transaction.atomic():
        run = model.objects.select_for_update().get(pk=run_id)
        if run.status != RunStatus.RUNNING:
            return False
        run.metrics, run.done, run.finished_at = report, report[done_key], timezone.now()
        if report["failed"]:
            run.status = RunStatus.FAILED
            run.error = failed_message.format(failed=report["failed"])
        else:
            run.status = RunStatus.SUCCEEDED
        run.save(update_fields=["metrics", "done", "finished_at", "status", "error"])
        webhooks.emit("evaluation.finished", **_finished_event(run, report))
    return True


def _finished_event(run, report: dict[str, Any]) -> dict[str, Any]:
    """The evaluation.finished webhook payload (issue #18)."""
    return {"kind": run._meta.model_name, "run_id": run.pk, "status": run.status, "agent": run.agent.name,
            "release_id": run.release_id, "error": run.error,
            "metrics": {k: v.get("value") for k, v in (report.get("metrics") or {}).items()}}


def run_finish_if_done(*, run_id: int) -> bool:
    """When no test is pending or in flight: store the report and close the run (idempotent)."""
    return finish_run(EvaluationRun, run_id, report_fn=lambda run: run_report(run, bootstrap=BOOTSTRAP_SAMPLES),
                      done_key="evaluated",
                      failed_message="{failed} test(s) could not be evaluated (the LLM call failed); resume to "
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


# --------------------------------------------------------------------------- re-judging

REJUDGE_CHUNK = 512  # results scored per batch (one BERTScore call, one bulk update)


@transaction.atomic
def run_rejudge(*, run: EvaluationRun, similarity: str = S.AUTO, threshold: float | None = None,
                created_by=None, start: bool = True) -> EvaluationRun:
    """A new run that judges the stored answers of a succeeded run again, with another reply
    similarity and/or threshold, without asking the agent. Its results start pending and are
    scored in batches (BERTScore embeds all their replies at once) by one lane."""
    source = EvaluationRun.objects.select_for_update().select_related("agent", "release").get(pk=run.pk)
    if source.status != RunStatus.SUCCEEDED:
        raise EvaluationError(f"run #{source.pk} is {source.status}: only a succeeded run can be re-judged")
    scorer = S.get_scorer(similarity)  # raises when BERTScore is asked for but not installed
    threshold = source.threshold if threshold is None else float(threshold)
    if not 0.0 <= threshold <= 1.0:
        raise EvaluationError(f"threshold {threshold} is outside 0..1")
    new = EvaluationRun.objects.create(
        agent=source.agent, release=source.release, created_by=created_by, similarity=scorer.name,
        threshold=threshold, concurrency=1, total=source.total, rejudged_from=source)
    copied = [TestResult(run=new, entry_id=entry_id, raw_reply=raw, parsed=parsed, latency_ms=latency,
                         llm_call_id=call_id, attempts=attempts)
              for entry_id, raw, parsed, latency, call_id, attempts in source.results.filter(
                  state=ResultState.DONE).order_by("id").values_list(
                  "entry_id", "raw_reply", "parsed", "latency_ms", "llm_call_id", "attempts")]
    TestResult.objects.bulk_create(copied, batch_size=500)
    if start:
        run_start(run_id=new.pk)
        new.refresh_from_db()
    return new


JUDGED_COLUMNS = ["state", "predicted_type", "reply_recalled", "reply_correct", "api_recalled", "api_correct",
                  "params_correct", "correct", "similarity", "error", "finished_at"]


def _store_judged(rows: list[tuple[int, dict[str, Any]]]) -> None:
    """UPDATE each result by primary key in one executemany. bulk_update's CASE WHEN over 11
    columns took 5.4 s for 1,420 rows on SQLite, three times the BERTScore work it followed."""
    fields = [TestResult._meta.get_field(name) for name in JUDGED_COLUMNS]
    quote = connection.ops.quote_name
    sql = (f"UPDATE {quote(TestResult._meta.db_table)} SET "
           + ", ".join(f"{quote(f.column)} = %s" for f in fields) + f" WHERE {quote('id')} = %s")
    params = [[f.get_db_prep_save(values[f.name], connection) for f in fields] + [pk] for pk, values in rows]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(sql, params)


def rejudge_execute(*, run_id: int, chunk: int = REJUDGE_CHUNK) -> int:
    """Judge the pending results of a re-judging run in batches; finish the run. Returns how many
    results were judged. Idempotent: a redelivered lane goes on with what is still pending, and
    a cancel stops it between batches."""
    judged = 0
    while True:
        run = EvaluationRun.objects.get(pk=run_id)
        if run.status != RunStatus.RUNNING:
            return judged
        # Only the expected action of each test is read, not its whole context.
        batch = list(run.results.filter(state__in=[ResultState.PENDING, ResultState.RUNNING]).order_by("id")
                     .values_list("pk", "parsed", "entry__data__expected")[:chunk])
        if not batch:
            break
        replies = [i for i, (_pk, parsed, expected) in enumerate(batch)
                   if (expected or {}).get("type") == M.REPLY and (parsed or {}).get("type") == M.REPLY]
        try:
            sims = S.get_scorer(run.similarity).score([str(batch[i][1].get("content", "")) for i in replies],
                                                      [str(batch[i][2].get("content", "")) for i in replies])
        except S.SimilarityUnavailable as exc:
            run_fail(run_id=run_id, error=str(exc))
            return judged
        similarity = dict(zip(replies, sims))
        now = timezone.now()
        rows = []
        for i, (pk, parsed, expected) in enumerate(batch):
            outcome = M.judge(expected or {}, parsed or {}, similarity=similarity.get(i), threshold=run.threshold)
            rows.append((pk, {**judged_fields(outcome, parsed or {}), "finished_at": now}))
        _store_judged(rows)
        judged += len(batch)
    run_finish_if_done(run_id=run_id)
    return judged


# --------------------------------------------------------------------------- reports


def _groups_for(entries: list[tuple[int, int, int, dict]]) -> dict[int, dict[str, list[str]]]:
    """entry pk -> {"noise": [...], "stage": [...]} for the breakdowns."""
    stages = M.stages_by_position((pk, conv, pos) for pk, conv, pos, _ in entries)
    out = {}
    for pk, _conv, _pos, data in entries:
        kinds = [str(k) for k in (data.get("noise_kinds") or []) if k] if isinstance(data, dict) else []
        out[pk] = {"noise": sorted(set(kinds)) or ["no noise"], "stage": [stages[pk]]}
    return out


def run_outcomes(run: EvaluationRun) -> list[M.Outcome]:
    entries = list(ReleaseTest.objects.filter(release_id=run.release_id)
                   .values_list("pk", "conversation_id", "position", "data"))
    groups = _groups_for(entries)
    expected_type = {pk: (data.get("expected") or {}).get("type") for pk, _c, _p, data in entries}
    conv = {pk: c for pk, c, _p, _d in entries}
    outcomes = []
    for r in run.results.filter(state=ResultState.DONE).values(
            "entry_id", "predicted_type", "reply_recalled", "reply_correct", "api_recalled", "api_correct",
            "params_correct", "correct", "similarity", "error"):
        outcomes.append(M.Outcome(
            conversation_id=conv[r["entry_id"]], expected_type=expected_type[r["entry_id"]],
            predicted_type=r["predicted_type"], reply_recalled=r["reply_recalled"],
            reply_correct=r["reply_correct"], api_recalled=r["api_recalled"], api_correct=r["api_correct"],
            params_correct=r["params_correct"], correct=r["correct"], similarity=r["similarity"],
            reason=r["error"], groups=groups[r["entry_id"]],
        ))
    return outcomes


def run_report(run: EvaluationRun, *, bootstrap: int = 0) -> dict[str, Any]:
    outcomes = run_outcomes(run)
    states = dict(run.results.values_list("state").annotate(n=Count("id")).values_list("state", "n"))
    metrics = M.compute_metrics(outcomes, bootstrap=bootstrap, seed=run.pk or 0)
    return {
        "similarity": run.similarity,
        "similarity_detail": S.describe(run.similarity),
        "threshold": run.threshold,
        "evaluated": len(outcomes),
        "failed": states.get(ResultState.FAILED, 0),
        "unparseable": sum(1 for o in outcomes if o.predicted_type == M.INVALID),
        "bootstrap": bootstrap,
        "metrics": M.metrics_to_json(metrics),
        "by_noise": {g: M.metrics_to_json(m) for g, m in M.breakdown(outcomes, "noise").items()},
        "by_stage": {g: M.metrics_to_json(m) for g, m in M.breakdown(outcomes, "stage").items()},
    }


def run_current_report(run: EvaluationRun) -> dict[str, Any]:
    """The stored report of a finished run, or a live one (no intervals) while it runs."""
    if run.metrics and run.metrics.get("metrics") and not run.is_active:
        return run.metrics
    return run_report(run, bootstrap=0)


def run_progress(run: EvaluationRun) -> dict[str, int]:
    counts = dict(run.results.values_list("state").annotate(n=Count("id")).values_list("state", "n"))
    return {state: counts.get(state, 0) for state in ResultState.values} | {"total": run.total}


def runs_with_progress(queryset):
    """Runs annotated with `evaluated` (results done so far), for lists of active runs."""
    return queryset.annotate(evaluated=Count("results", filter=Q(results__state=ResultState.DONE)))


def runs_compare(runs: list[EvaluationRun]) -> list[dict[str, Any]]:
    rows = []
    for run in runs:
        report = run_current_report(run)
        rows.append({"run": run, "report": report, "metrics": M.metrics_from_json(report.get("metrics", {}))})
    return rows


def runs_differences(runs: list[EvaluationRun], *, bootstrap: int = BOOTSTRAP_SAMPLES) -> list[dict[str, Any]]:
    """Each run after the first against the first (the baseline): metric differences with paired
    bootstrap intervals over the conversations, when both ran on the same release."""
    if len(runs) < 2:
        return []
    base = runs[0]
    base_outcomes = run_outcomes(base)
    out = []
    for run in runs[1:]:
        if run.release_id != base.release_id:
            out.append({"run": run, "differences": None,
                        "why": f"another release ({run.release}); differences are paired on one release"})
            continue
        diffs = M.paired_differences(run_outcomes(run), base_outcomes, bootstrap=bootstrap,
                                     seed=base.pk * 100_003 + run.pk)
        out.append({"run": run, "differences": [diffs[k] for k in M.METRIC_KEYS], "why": ""})
    return out


def latest_runs_by_agent(release: Release) -> dict[int, EvaluationRun]:
    out: dict[int, EvaluationRun] = {}
    for run in (EvaluationRun.objects.filter(release=release, status=RunStatus.SUCCEEDED)
                .select_related("agent").order_by("-finished_at", "-id")):
        out.setdefault(run.agent_id, run)
    return out


def releases_compare(*, release_a: Release, release_b: Release, metric: str = "test_correct") -> dict[str, Any]:
    """Figure 5: one point per agent with a finished run on both releases, and the correlations."""
    if metric not in M.METRIC_LABELS:
        raise EvaluationError(f"unknown metric {metric!r}")
    runs_a, runs_b = latest_runs_by_agent(release_a), latest_runs_by_agent(release_b)
    points = []
    for agent_id in sorted(set(runs_a) & set(runs_b), key=lambda a: runs_a[a].agent.name):
        ma = M.metrics_from_json(run_current_report(runs_a[agent_id]).get("metrics", {})).get(metric)
        mb = M.metrics_from_json(run_current_report(runs_b[agent_id]).get("metrics", {})).get(metric)
        if ma is None or mb is None or ma.value is None or mb.value is None:
            continue
        points.append({"label": runs_a[agent_id].agent.name, "x": 100 * ma.value, "y": 100 * mb.value,
                       "run_a": runs_a[agent_id], "run_b": runs_b[agent_id]})
    xs, ys = [p["x"] for p in points], [p["y"] for p in points]
    return {"points": points, "pearson": M.pearson(xs, ys), "spearman": M.spearman(xs, ys),
            "metric": metric, "metric_label": M.METRIC_LABELS[metric]}


def metric_table(metrics: dict[str, M.Metric]) -> str:
    """The Table 2 row as plain text (the management command prints it)."""
    lines = [f"{'metric':<26} {'value':>7}  {'n/d':>13}  95% CI"]
    for key in M.METRIC_KEYS:
        m = metrics.get(key)
        if m is None:
            continue
        value = f"{m.percent:6.1f}%" if m.value is not None else "     –"
        ci = (f"[{100 * m.ci_low:.1f}, {100 * m.ci_high:.1f}]" if m.ci_low is not None and m.ci_high is not None
              else "")
        lines.append(f"{m.label:<26} {value:>7}  {m.numerator:>6}/{m.denominator:<6}  {ci}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- per-test downloads, confusions

RESULT_COLUMNS = ["test_id", "conversation_id", "position", "noise_kinds", "expected_type", "expected",
                  "predicted_type", "answer", "similarity", "reply_recalled", "reply_correct", "api_recalled",
                  "api_correct", "params_correct", "correct", "reason", "state", "latency_ms", "raw_reply"]


def _action_text(action: dict[str, Any]) -> str:
    if action.get("type") == M.REPLY:
        return str(action.get("content", ""))
    if action.get("type") == M.API_CALL:
        return f"{action.get('name')}({json.dumps(action.get('parameters') or {}, ensure_ascii=False, sort_keys=True)})"
    return ""


def run_result_rows(run: EvaluationRun, chunk_size: int = 500):
    """One dict per test of the run (RESULT_COLUMNS), in conversation order, for downloads."""
    rows = (run.results.order_by("entry__conversation_id", "entry__position", "entry__test_id")
            .values_list("entry__test_id", "entry__conversation_id", "entry__position", "entry__data__noise_kinds",
                         "entry__data__expected", "predicted_type", "parsed", "similarity", "reply_recalled",
                         "reply_correct", "api_recalled", "api_correct", "params_correct", "correct", "error",
                         "state", "latency_ms", "raw_reply"))
    for (test_id, conv, pos, noise, expected, ptype, parsed, sim, rr, rc, ar, ac, pc, correct, error, state,
         latency, raw) in rows.iterator(chunk_size=chunk_size):
        expected = expected or {}
        yield {
            "test_id": test_id, "conversation_id": conv, "position": pos, "noise_kinds": ",".join(noise or []),
            "expected_type": expected.get("type", ""), "expected": _action_text(expected),
            "predicted_type": ptype, "answer": _action_text(parsed or {}),
            "similarity": "" if sim is None else f"{sim:.4f}", "reply_recalled": int(rr), "reply_correct": int(rc),
            "api_recalled": int(ar), "api_correct": int(ac), "params_correct": int(pc), "correct": int(correct),
            "reason": error, "state": state, "latency_ms": latency, "raw_reply": raw,
        }


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

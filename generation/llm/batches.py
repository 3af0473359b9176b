"""Batch mode: a job's chat requests go through the Batch API (`/files` + `/batches`) at its price.

How a request travels (the stage code is the same as online):

1. The item runs; `chat(batch=True)` finds no reply for this request in the job's BatchRequest
   rows (nor a validated one in the cache), stores the request as `pending` and raises
   LLMDeferred; the item is let go unfinished (services/items.py) and a poll is scheduled.
2. The poll (`batches_poll`, a Celery task that re-schedules itself every LLM_BATCH_POLL_SECONDS
   while work is open; beat runs it too) writes each job's pending requests per model as JSONL
   (`custom_id` = the row), uploads it (`purpose=batch`) and creates a batch.
3. Later polls retrieve the batch; once it is completed, failed, expired or cancelled they read
   its output and error files: a 200 line becomes the request's LLMCall row (cost at
   LLM_BATCH_PRICE_FACTOR of the online price) and the item is run again; a 429/5xx line, a line
   the batch expired before running, or a request with no line at all goes into the next batch
   (at most LLM_MAX_RETRIES times more); any other error fails the request, as online.
4. Run again, the item finds its reply and goes through the same parsing, validation and repair;
   a repair turn is a new request, so it travels in the next batch. Only validated replies are
   served from the cache afterwards, as online.
"""
from __future__ import annotations

import json
import logging
from collections import defaultdict
from decimal import Decimal
from typing import Any, Callable

import openai
from django.conf import settings
from django.core.cache import cache
from django.db.models import F
from django.utils import timezone

from generation.llm import accounting, capabilities
from generation.llm.config import LLMDeferred, LLMFailed, LLMResult, LLMStopped, cost_of, public_endpoint
from generation.llm.providers import batch_url, client_for
from generation.models import BatchRequest, BatchRequestState, BatchStatus, LLMBatch, LLMCall, LLMOutcome
from generation.redact import redact
from generation.llm.config import endpoint_api_key, endpoint_base_url

logger = logging.getLogger(__name__)

State = BatchRequestState
FINAL = ("completed", "failed", "expired", "cancelled")
REFUSED = "structured outputs refused"
_POLL_KEY = "generation:batches-poll-scheduled"


# --------------------------------------------------------------------------- the item's side


def _job_id(job: Any) -> int:
    return job if isinstance(job, int) else job.pk


def _result(row: dict, check: Callable[[str], list] | None, validated: bool) -> LLMResult:
    from generation.llm.client import _findings_fields

    call = LLMCall.objects.filter(pk=row["call_id"]).values(
        "response", "tool_calls", "outcome", "model", "prompt_tokens", "completion_tokens", "cost_usd").first()
    if call is None:
        raise LLMFailed("the reply of this batch request was deleted")
    content = call["response"] or ""
    findings = check(content) if check else []
    if call["outcome"] in (LLMOutcome.OK, LLMOutcome.INVALID):
        LLMCall.objects.filter(pk=row["call_id"]).update(
            outcome=LLMOutcome.INVALID if findings else LLMOutcome.OK,
            validated=bool(validated or check) and not findings, **_findings_fields(findings))
    return LLMResult(content=content, tool_calls=call["tool_calls"], prompt_tokens=call["prompt_tokens"],
                     completion_tokens=call["completion_tokens"], cached=call["outcome"] == LLMOutcome.CACHED,
                     call_id=row["call_id"], model=call["model"], cost_usd=call["cost_usd"], findings=findings)


def reply_or_defer(*, job: Any, body: dict, meta: dict, check: Callable[[str], list] | None, validated: bool,
                   cached: Callable[[], LLMResult | None] | None) -> LLMResult:
    """The reply to this request from the job's batches (or the cache); LLMDeferred while it waits."""
    if job is None:
        raise LLMFailed("batch mode needs a job")
    job_id = _job_id(job)
    digest = meta["prompt_hash"]
    meta = {**meta, "output_form": str(meta.get("output_form", ""))}
    row = BatchRequest.objects.filter(job_id=job_id, digest=digest).values("id", "state", "call_id", "error").first()
    if row is None:
        hit = cached() if cached is not None else None
        if hit is not None:  # remembered as this job's reply, so a rerun of the item does not count it twice
            BatchRequest.objects.get_or_create(job_id=job_id, digest=digest, defaults=dict(
                stage=meta["stage"], key=meta["key"], body=body, meta=meta, state=State.DONE, call_id=hit.call_id))
            return hit
        accounting.job_may_spend(job_id)  # LLMStopped: nothing more is queued for a stopped job
        BatchRequest.objects.get_or_create(job_id=job_id, digest=digest, defaults=dict(
            stage=meta["stage"], key=meta["key"], body=body, meta=meta, state=State.PENDING))
        raise LLMDeferred(f"{meta['key']}: waiting for the next batch")
    if row["state"] in (State.PENDING, State.SUBMITTED):
        raise LLMDeferred(f"{meta['key']}: waiting for its batch")
    if row["state"] == State.FAILED:
        if row["error"].startswith(REFUSED):
            from generation.llm.client import _SchemaRefused

            raise _SchemaRefused()
        raise LLMFailed(row["error"], call_id=row["call_id"])
    return _result(row, check, validated)


def batches_poll_soon() -> None:
    """Schedule one poll in LLM_BATCH_POLL_SECONDS unless one is scheduled already (all processes)."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return  # a poll that re-schedules itself cannot run inline; batch mode needs a worker
    interval = settings.LLM_BATCH_POLL_SECONDS
    if cache.add(_POLL_KEY, "1", timeout=int(interval * 4) + 30):
        from celery import current_app

        current_app.send_task("generation.batches_poll", countdown=interval)


# --------------------------------------------------------------------------- the poll


def _client() -> openai.OpenAI:
    return client_for(endpoint_base_url(), endpoint_api_key(), settings.OPENAI_TIMEOUT)


def _submit(client: openai.OpenAI, job_id: int, ids: list[int]) -> list[dict]:
    """Claim these pending requests into a new batch and send it (back to pending if sending fails
    for a moment); returns the requests that failed for good (the endpoint has no Batch API)."""
    base_url = endpoint_base_url()
    batch = LLMBatch.objects.create(job_id=job_id, endpoint=public_endpoint(base_url))
    BatchRequest.objects.filter(pk__in=ids, state=State.PENDING).update(
        state=State.SUBMITTED, batch=batch, attempts=F("attempts") + 1)
    rows = list(BatchRequest.objects.filter(batch=batch, state=State.SUBMITTED).values("id", "body", "stage", "key"))
    if not rows:  # another poll took them
        batch.delete()
        return []
    url = batch_url(base_url)
    data = "".join(json.dumps({"custom_id": f"r{r['id']}", "method": "POST", "url": url, "body": r["body"]},
                              ensure_ascii=False) + "\n" for r in rows).encode()
    try:
        upload = client.files.create(file=("requests.jsonl", data, "application/jsonl"), purpose="batch")
        remote = client.batches.create(input_file_id=upload.id, endpoint=url,
                                       completion_window=settings.LLM_BATCH_WINDOW)
    except (openai.NotFoundError, openai.AuthenticationError, openai.PermissionDeniedError) as exc:
        # No Batch API here (or not for this key): waiting would never end. Fail these requests.
        why = f"the endpoint refused the Batch API (HTTP {exc.status_code}): run this job online"
        BatchRequest.objects.filter(batch=batch, state=State.SUBMITTED).update(state=State.FAILED, error=why)
        LLMBatch.objects.filter(pk=batch.pk).update(status=BatchStatus.FAILED, error=why, failed=len(rows),
                                                    requests=len(rows), finished_at=timezone.now())
        if isinstance(exc, openai.NotFoundError):
            capabilities.remember(base_url, "", batches=False)
        return rows
    except openai.APIError as exc:
        logger.warning("submitting a batch of job %s failed: %s", job_id, type(exc).__name__)
        BatchRequest.objects.filter(batch=batch, state=State.SUBMITTED).update(
            state=State.PENDING, batch=None, attempts=F("attempts") - 1)
        batch.delete()
        return []
    LLMBatch.objects.filter(pk=batch.pk).update(remote_id=remote.id, input_file_id=upload.id, requests=len(rows),
                                                remote_status=remote.status or "", polled_at=timezone.now())
    return []


def _submit_pending(client: openai.OpenAI) -> list[tuple[int, str, str]]:
    rerun: list[tuple[int, str, str]] = []
    pending = _mine(BatchRequest.objects.filter(state=State.PENDING)).values("id", "job_id", "stage", "key", "body")
    groups: dict[tuple[int, str], list[dict]] = defaultdict(list)
    for r in pending:
        groups[(r["job_id"], str(r["body"].get("model", "")))].append(r)
    for (job_id, _model), rows in groups.items():
        try:
            accounting.job_may_spend(job_id)
        except LLMStopped as exc:  # the job stopped: its items finish with what they have
            BatchRequest.objects.filter(pk__in=[r["id"] for r in rows], state=State.PENDING).update(
                state=State.FAILED, error=str(exc)[:2000])
            rerun += [(job_id, r["stage"], r["key"]) for r in rows]
            continue
        failed = _submit(client, job_id, [r["id"] for r in rows])  # one batch per job and model
        rerun += [(job_id, r["stage"], r["key"]) for r in failed]
    return rerun


def _line_failure(line: dict | None, remote_status: str) -> tuple[str, int | None, bool]:
    """(why, status code, retryable) of a line that brought no reply."""
    if line is None:
        if remote_status == "expired":
            return "the batch expired before this request ran", None, True
        return f"the batch ended {remote_status} without a result for this request", None, True
    error, response = line.get("error") or {}, line.get("response") or {}
    if error:
        code = str(error.get("code") or "")
        return f"batch line {code or 'error'}: {error.get('message', '')}"[:2000], None, True
    status = response.get("status_code")
    message = ((response.get("body") or {}).get("error") or {}).get("message", "")
    retryable = status is None or status == 429 or status >= 500
    return f"HTTP {status}: {message}"[:2000], status, retryable


def _ingest(batch: LLMBatch, remote_status: str, lines: dict[str, dict]) -> tuple[list, dict[str, int]]:
    rerun: list[tuple[int, str, str]] = []
    counts = {"succeeded": 0, "failed": 0, "expired": 0}
    factor = Decimal(str(settings.LLM_BATCH_PRICE_FACTOR))
    secrets = [endpoint_api_key()] if endpoint_api_key() else []
    for br in BatchRequest.objects.filter(batch=batch, state=State.SUBMITTED):
        line = lines.get(f"r{br.pk}")
        meta = {k: v for k, v in br.meta.items() if k in {f.name for f in LLMCall._meta.fields}}
        response = (line or {}).get("response") or {}
        body = response.get("body") or {}
        if response.get("status_code") == 200 and body.get("choices"):
            message = body["choices"][0].get("message") or {}
            usage = body.get("usage") or {}
            pt, ct = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
            calls = [{"name": c["function"]["name"], "arguments": c["function"].get("arguments") or ""}
                     for c in message.get("tool_calls") or [] if c.get("function")]
            call = accounting.record(br.job_id, **meta, attempt=br.attempts, response=redact(message.get("content") or "", secrets),
                                     tool_calls=calls, status_code=200, prompt_tokens=pt, completion_tokens=ct,
                                     outcome=LLMOutcome.OK, cost_usd=cost_of(meta["model"], pt, ct) * factor,
                                     batch=batch)
            if meta.get("output_form") == "schema":
                capabilities.remember(endpoint_base_url(), meta["model"], structured_outputs=True)
            BatchRequest.objects.filter(pk=br.pk).update(state=State.DONE, call=call, error="")
            counts["succeeded"] += 1
            rerun.append((br.job_id, br.stage, br.key))
            continue
        why, status, retryable = _line_failure(line, remote_status)
        why = redact(why, secrets)
        expired = "expired" in why
        counts["expired" if expired else "failed"] += 1
        refused = meta.get("output_form") == "schema" and capabilities.refused_schema(status, why)
        last = refused or not retryable or br.attempts > settings.LLM_MAX_RETRIES
        call = accounting.record(br.job_id, **meta, attempt=br.attempts, status_code=status, error=why,
                                 outcome=LLMOutcome.ERROR if last and not refused else LLMOutcome.RETRIED, batch=batch)
        if refused:
            capabilities.remember(endpoint_base_url(), meta["model"], structured_outputs=False)
            why = f"{REFUSED} ({why}); sent again in the prompt-only form"
        if last:
            BatchRequest.objects.filter(pk=br.pk).update(state=State.FAILED, call=call, error=why)
            rerun.append((br.job_id, br.stage, br.key))
        else:
            BatchRequest.objects.filter(pk=br.pk).update(state=State.PENDING, error=why)
    return rerun, counts


def _read(client: openai.OpenAI, file_id: str | None) -> dict[str, dict]:
    lines: dict[str, dict] = {}
    if file_id:
        for text in client.files.content(file_id).text.splitlines():
            if text.strip():
                obj = json.loads(text)
                lines[str(obj.get("custom_id"))] = obj
    return lines


def _check(client: openai.OpenAI, batch: LLMBatch) -> list[tuple[int, str, str]]:
    remote = client.batches.retrieve(batch.remote_id)
    status = remote.status or ""
    LLMBatch.objects.filter(pk=batch.pk).update(remote_status=status, polled_at=timezone.now())
    if status not in FINAL or not LLMBatch.objects.filter(pk=batch.pk, status=BatchStatus.SUBMITTED).update(
            status=BatchStatus.INGESTING):
        return []
    try:
        lines = {**_read(client, remote.error_file_id), **_read(client, remote.output_file_id)}
        rerun, counts = _ingest(batch, status, lines)
    except Exception:
        # Unreadable files, the provider gone mid-read: hand the batch back to the next poll (the
        # lines read so far are done or pending again already, and are not read twice).
        LLMBatch.objects.filter(pk=batch.pk).update(status=BatchStatus.SUBMITTED)
        raise
    LLMBatch.objects.filter(pk=batch.pk).update(
        status=BatchStatus.FAILED if status == "failed" else BatchStatus.DONE, finished_at=timezone.now(),
        error=redact(str(getattr(remote, "errors", "") or ""))[:2000] if status == "failed" else "", **counts)
    return rerun


def _mine(qs):
    """The rows of the current project's jobs (each project polls its own endpoint with its own key)."""
    from projects.context import current_project_id

    pid = current_project_id()
    return qs if pid is None else qs.filter(job__project_id=pid)


def batches_poll() -> tuple[list[tuple[int, str, str]], bool]:
    """Submit pending requests, read finished batches; (items to run again, whether work is still open).

    Run with no project set (beat, the self-scheduled poll), it polls each project that has batch
    work in turn, in that project: its endpoint, its key (issue #30)."""
    from projects.context import current_project_id, use_project

    cache.delete(_POLL_KEY)
    if current_project_id() is not None:
        return _poll_project()
    pids = set(BatchRequest.objects.filter(state__in=[State.PENDING, State.SUBMITTED])
               .values_list("job__project_id", flat=True).distinct())
    pids |= set(LLMBatch.objects.filter(status=BatchStatus.SUBMITTED).exclude(remote_id="")
                .values_list("job__project_id", flat=True).distinct())
    rerun: list[tuple[int, str, str]] = []
    more = False
    for pid in sorted(p for p in pids if p is not None):
        with use_project(pid):
            found, still = _poll_project()
        rerun += found
        more = more or still
    return sorted(set(rerun)), more


def _poll_project() -> tuple[list[tuple[int, str, str]], bool]:
    if not endpoint_base_url():
        return [], False
    client = _client()
    rerun = _submit_pending(client)
    for batch in _mine(LLMBatch.objects.filter(status=BatchStatus.SUBMITTED).exclude(remote_id="")):
        try:
            rerun += _check(client, batch)
        except (openai.APIError, ValueError) as exc:  # down for a moment, or a bad file: asked again next poll
            logger.warning("polling batch %s failed: %s", batch.remote_id, type(exc).__name__)
    more = _mine(BatchRequest.objects.filter(state__in=[State.PENDING, State.SUBMITTED])).exists()
    return sorted(set(rerun)), more

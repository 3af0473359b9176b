"""Exact cost: every request has an LLMCall row before it is sent, and none is lost with a worker.

`call_start` writes the row as `in_flight` (with the prompt tokens estimated from the text) in its
own committed transaction once the request holds its limiter lease, right before it goes out;
`call_finish` completes it and adds the tokens and cost to the job. A worker killed in between leaves the row `in_flight`;
`calls_mark_lost` (run when a worker starts, and by the watchdog) marks such orphans
`lost_in_flight` and charges their estimated prompt to the job, so the job page and the cost count
every request that may have reached the endpoint.

Prompt tokens of a lost call are an estimate (about four characters per token, plus a few per
message), flagged `tokens_estimated`: no tokenizer is downloaded at run time.
"""
from __future__ import annotations

import json
import os
import socket
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from generation.llm.config import LLMStopped, cost_of
from generation.models import GenerationJob, LLMCall, LLMOutcome

HOST = socket.gethostname()

# A row still in flight this long after the longest possible request belongs to a dead worker
# even when we cannot check its process (another host).
_LOST_GRACE = timedelta(minutes=5)


def worker_id() -> str:
    return f"{HOST}:{os.getpid()}"


def estimate_prompt_tokens(messages: list[dict]) -> int:
    """An offline estimate: ~4 characters per token plus 4 tokens of framing per message."""
    chars = sum(len(m.get("content") if isinstance(m.get("content"), str)
                    else json.dumps(m.get("content"), ensure_ascii=False)) for m in messages)
    return max(1, chars // 4 + 4 * len(messages))


def _job_id(job: Any) -> int | None:
    return job.pk if isinstance(job, GenerationJob) else job


def _add_to_job(job_id: int | None, prompt_tokens: int, completion_tokens: int, cost: Decimal) -> None:
    if job_id is not None and (prompt_tokens or completion_tokens):
        GenerationJob.objects.filter(pk=job_id).update(
            prompt_tokens=F("prompt_tokens") + prompt_tokens,
            completion_tokens=F("completion_tokens") + completion_tokens,
            cost_usd=F("cost_usd") + cost,
        )


def record(job: Any, **fields: Any) -> LLMCall:
    """One finished LLMCall row (a cache hit), and the job's totals, in one short transaction."""
    job_id = _job_id(job)
    with transaction.atomic():
        call = LLMCall.objects.create(job_id=job_id, worker=worker_id(), **fields)
        _add_to_job(job_id, fields.get("prompt_tokens", 0), fields.get("completion_tokens", 0),
                    fields.get("cost_usd", Decimal(0)))
    return call


# A job in any other state sends nothing more (its items finish with what they have).
_SPENDING_STATUSES = ("queued", "running")


def cost_limit_message(limit: Any, spent: Any) -> str:
    return (f"cost limit reached: ${Decimal(spent):.4f} spent of the ${Decimal(str(limit)):.2f} limit; "
            "the job stopped and everything made so far is kept")


def over_cost_limit(cost: Any, limit: Any) -> bool:
    return limit is not None and Decimal(cost) >= Decimal(str(limit))


def job_may_spend(job: Any) -> None:
    """Raise LLMStopped when the job stopped or reached its cost limit (one indexed read)."""
    job_id = _job_id(job)
    if job_id is None:
        return
    row = GenerationJob.objects.filter(pk=job_id).values_list("status", "cost_usd", "config__cost_limit").first()
    if row is None:
        return
    status, cost, limit = row
    if status not in _SPENDING_STATUSES:
        raise LLMStopped(f"job {job_id} is {status}: no more requests are sent")
    if over_cost_limit(cost, limit):
        raise LLMStopped(cost_limit_message(limit, cost), cost_limit=True)


def call_start(job: Any, **fields: Any) -> int:
    """The row of a request about to be sent, committed before it goes out (one INSERT: it commits
    on its own unless the caller holds a transaction). Written once the request holds its limiter
    lease, right before it is sent, so a row left in flight is a request that was sent."""
    call = LLMCall.objects.create(job_id=_job_id(job), worker=worker_id(), outcome=LLMOutcome.IN_FLIGHT,
                                  tokens_estimated=True, **fields)
    return call.pk


def call_finish(call_id: int, job: Any, **fields: Any) -> None:
    """Complete an in-flight row (reply or error) and add its tokens and cost to the job."""
    job_id = _job_id(job)
    with transaction.atomic():
        LLMCall.objects.filter(pk=call_id).update(**fields)
        _add_to_job(job_id, fields.get("prompt_tokens", 0), fields.get("completion_tokens", 0),
                    fields.get("cost_usd", Decimal(0)))


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def orphaned(call: dict, now) -> bool:
    """An in-flight row whose sender is gone: a dead process on this host, or too old anywhere."""
    host, _, pid = (call["worker"] or "").rpartition(":")
    if host == HOST and pid.isdigit() and int(pid) != os.getpid():
        return not process_alive(int(pid))
    limit = timedelta(seconds=settings.OPENAI_TIMEOUT * (settings.LLM_MAX_RETRIES + 1)) + _LOST_GRACE
    return now - call["created_at"] > limit


def calls_mark_lost(job_id: int | None = None) -> int:
    """Mark orphaned in-flight rows `lost_in_flight` and charge their estimated prompt; returns how many."""
    rows = LLMCall.objects.filter(outcome=LLMOutcome.IN_FLIGHT)
    if job_id is not None:
        rows = rows.filter(job_id=job_id)
    now = timezone.now()
    lost = 0
    for call in rows.values("id", "job_id", "worker", "created_at", "model", "prompt_tokens"):
        if not orphaned(call, now):
            continue
        cost = cost_of(call["model"], call["prompt_tokens"], 0)
        with transaction.atomic():
            changed = LLMCall.objects.filter(pk=call["id"], outcome=LLMOutcome.IN_FLIGHT).update(
                outcome=LLMOutcome.LOST, tokens_estimated=True, cost_usd=cost,
                error="the worker sending this request stopped before a reply was recorded; "
                      "prompt tokens estimated from the text")
            if changed:
                _add_to_job(call["job_id"], call["prompt_tokens"], 0, cost)
                lost += 1
    return lost

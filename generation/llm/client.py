"""The one door to the LLM: the official `openai` client against any OpenAI-compatible endpoint.

`chat(...)` adds what the client alone does not give us:

* bounded concurrency per endpoint (a process-wide semaphore per base URL, LLM_MAX_CONCURRENCY);
* our own retries (the client's are off): 429, 5xx, timeouts, connection errors and unreadable
  bodies are retried with exponential backoff that honours `retry-after`, up to LLM_MAX_RETRIES;
  any other 4xx fails at once;
* one LLMCall row per attempt (the request without any key, the reply, tokens, latency, outcome);
* a response cache: the same model + messages + parameters reuse the stored OK reply (LLM_CACHE);
* cost from the LLM_PRICES table.

The key is read from settings when the client is built and never written to a row or a log.
"""
from __future__ import annotations

import hashlib
import json
import logging
import random
import threading
import time
from decimal import Decimal
from typing import Any

import openai
from django.conf import settings
from django.db import transaction
from django.db.models import F

from generation.llm.config import (
    NO_ENDPOINT_MESSAGE,
    LLMFailed,
    LLMResult,
    LLMUnavailable,
    cost_of,
    public_endpoint,
    stage_model,
)
from generation.models import GenerationJob, LLMCall, LLMOutcome


# The client's HTTP library logs every request line at INFO; keep them (and any header) out.
for _name in ("httpx2", "httpcore2"):
    logging.getLogger(_name).setLevel(logging.WARNING)

# --------------------------------------------------------------------------- concurrency

_lock = threading.Lock()
_semaphores: dict[str, threading.BoundedSemaphore] = {}
_clients: dict[tuple, openai.OpenAI] = {}


def endpoint_semaphore(base_url: str) -> threading.BoundedSemaphore:
    size = settings.LLM_MAX_CONCURRENCY
    with _lock:
        sem = _semaphores.get(f"{base_url}|{size}")
        if sem is None:
            sem = _semaphores[f"{base_url}|{size}"] = threading.BoundedSemaphore(size)
        return sem


def _client(base_url: str, api_key: str, timeout: float) -> openai.OpenAI:
    # Keyed on a hash of the key so the key itself is not kept as a dict key in plain sight.
    ident = (base_url, hashlib.sha256(api_key.encode()).hexdigest(), timeout)
    with _lock:
        client = _clients.get(ident)
        if client is None:
            client = _clients[ident] = openai.OpenAI(
                base_url=base_url, api_key=api_key or "not-needed", max_retries=0, timeout=timeout
            )
        return client


# --------------------------------------------------------------------------- errors


class _Transient(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _retry_after(exc: openai.APIStatusError) -> float | None:
    headers = getattr(exc.response, "headers", None) or {}
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return float(raw_ms) / 1000.0
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw:
        try:
            return float(raw)
        except ValueError:
            return None  # an HTTP date; fall back to our own backoff
    return None


def _classify(exc: BaseException) -> tuple[bool, str, float | None]:
    """(retryable, message, retry_after)."""
    if isinstance(exc, openai.APITimeoutError):
        return True, "timeout", None
    if isinstance(exc, openai.APIConnectionError):
        return True, f"connection error: {exc}", None
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status == 429:
            return True, f"HTTP 429 rate limited: {exc.message}", _retry_after(exc)
        if status >= 500:
            return True, f"HTTP {status}: {exc.message}", _retry_after(exc)
        return False, f"HTTP {status}: {exc.message}", None
    if isinstance(exc, (openai.APIResponseValidationError, json.JSONDecodeError, ValueError)):
        return True, f"unreadable response: {exc}", None
    return False, f"{type(exc).__name__}: {exc}", None


def backoff_delay(attempt: int, retry_after: float | None) -> float:
    """Seconds to wait before attempt `attempt + 1`: retry-after if given, else exponential."""
    base = settings.LLM_BACKOFF_BASE
    exponential = base * (2 ** (attempt - 1)) * (1 + random.random() * 0.25)
    if retry_after is not None:
        return min(max(retry_after, 0.0), 120.0)
    return min(exponential, 60.0)


# --------------------------------------------------------------------------- the call


def request_hash(request: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _record(job, **fields) -> LLMCall:
    """One LLMCall row, and the job's token and cost totals, in one short transaction."""
    job_id = job.pk if isinstance(job, GenerationJob) else job
    with transaction.atomic():
        call = LLMCall.objects.create(job_id=job_id, **fields)
        if job_id is not None and (fields.get("prompt_tokens") or fields.get("completion_tokens")):
            GenerationJob.objects.filter(pk=job_id).update(
                prompt_tokens=F("prompt_tokens") + fields.get("prompt_tokens", 0),
                completion_tokens=F("completion_tokens") + fields.get("completion_tokens", 0),
                cost_usd=F("cost_usd") + fields.get("cost_usd", Decimal(0)),
            )
    return call


def _tool_calls(message: Any) -> list[dict[str, str]]:
    out = []
    for call in getattr(message, "tool_calls", None) or []:
        fn = getattr(call, "function", None)
        if fn is not None:
            out.append({"name": fn.name, "arguments": fn.arguments or ""})
    return out


def chat(
    *,
    stage: str,
    messages: list[dict],
    model: str | None = None,
    temperature: float = 0.0,
    response_format: dict | None = None,
    tools: list | None = None,
    job=None,
    key: str = "",
    template: str = "",
    template_version: str = "",
    base_url: str | None = None,
    api_key: str | None = None,
    use_cache: bool | None = None,
    timeout: float | None = None,
) -> LLMResult:
    """One chat completion with retries, bounded concurrency, logging and caching.

    `job` is a GenerationJob, a job id or None. Raises LLMUnavailable when no endpoint is set and
    LLMFailed when the call fails for good (every attempt is an LLMCall row either way).
    """
    base_url = base_url or settings.OPENAI_BASE_URL
    if not base_url:
        raise LLMUnavailable(NO_ENDPOINT_MESSAGE)
    api_key = api_key if api_key is not None else settings.OPENAI_API_KEY
    model = model or stage_model(stage)
    timeout = timeout or settings.OPENAI_TIMEOUT
    use_cache = settings.LLM_CACHE if use_cache is None else use_cache

    request: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
    if response_format:
        request["response_format"] = response_format
    if tools:
        request["tools"] = tools
    digest = request_hash(request)
    logged_request = {**request, "endpoint": public_endpoint(base_url)}
    common = dict(stage=stage, key=key, model=model, template=template, template_version=template_version,
                  prompt_hash=digest, request=logged_request)

    if use_cache:
        hit = (LLMCall.objects.filter(prompt_hash=digest, outcome=LLMOutcome.OK)
               .order_by("-id").values("response", "tool_calls", "prompt_tokens", "completion_tokens").first())
        if hit is not None:
            call = _record(job, **common, attempt=1, response=hit["response"], tool_calls=hit["tool_calls"],
                           outcome=LLMOutcome.CACHED)
            return LLMResult(content=hit["response"], tool_calls=hit["tool_calls"], cached=True, call_id=call.pk,
                             model=model, prompt_tokens=0, completion_tokens=0)

    client = _client(base_url, api_key, timeout)
    semaphore = endpoint_semaphore(base_url)
    kwargs: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
    if response_format:
        kwargs["response_format"] = response_format
    if tools:
        kwargs["tools"] = tools

    attempts = settings.LLM_MAX_RETRIES + 1
    for attempt in range(1, attempts + 1):
        started = time.monotonic()
        with semaphore:
            try:
                completion = client.chat.completions.create(**kwargs)
                message = completion.choices[0].message
                content = message.content
                calls = _tool_calls(message)
                usage = completion.usage
                error: BaseException | None = None
            except Exception as exc:  # classified below; unknown errors are not retried
                error = exc
        latency_ms = int((time.monotonic() - started) * 1000)
        if error is None:
            pt = getattr(usage, "prompt_tokens", 0) or 0
            ct = getattr(usage, "completion_tokens", 0) or 0
            cost = cost_of(model, pt, ct)
            call = _record(job, **common, attempt=attempt, response=content or "", tool_calls=calls,
                           prompt_tokens=pt, completion_tokens=ct, latency_ms=latency_ms,
                           outcome=LLMOutcome.OK, cost_usd=cost)
            return LLMResult(content=content, tool_calls=calls, prompt_tokens=pt, completion_tokens=ct,
                             latency_ms=latency_ms, cached=False, call_id=call.pk, model=model, cost_usd=cost)
        retryable, why, retry_after = _classify(error)
        last = attempt == attempts or not retryable
        call = _record(job, **common, attempt=attempt, latency_ms=latency_ms,
                       outcome=LLMOutcome.ERROR if last else LLMOutcome.RETRIED, error=why[:2000])
        if last:
            reason = (f"{why} (after {attempt} attempts)" if retryable else f"{why} (not retried)")
            raise LLMFailed(reason, call_id=call.pk)
        time.sleep(backoff_delay(attempt, retry_after))
    raise AssertionError("unreachable")

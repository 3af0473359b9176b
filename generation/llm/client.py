"""The one door to the LLM: the official `openai` client against any OpenAI-compatible endpoint.

`chat(...)` adds what the client alone does not give us:

* adaptive rate control per endpoint and model, shared by every worker process (limiter.py): a
  window of requests in flight (AIMD, at most the job's maximum or LLM_MAX_CONCURRENCY), Retry-After
  and the x-ratelimit-* headers;
* our own retries (the client's are off): 429, 5xx, timeouts, connection errors and unreadable
  bodies are retried with exponential backoff that honours `retry-after`, up to LLM_MAX_RETRIES;
  any other 4xx fails at once;
* one LLMCall row per attempt (the request without any key, the reply, tokens, latency, outcome);
* a response cache: the same model + messages + parameters reuse the stored OK reply (LLM_CACHE);
* cost from the LLM_PRICES table;
* structured outputs: a stage's JSON Schema goes as `response_format` where the endpoint and
  model take it (learnt from the first reply and remembered, capabilities.py); a 400 refusing it
  switches that endpoint and model to the prompt-only form, and the call is sent again in it;
* batch mode (`batch=True`): the request joins the job's next Batch API batch (batches.py) and
  LLMDeferred is raised until its reply is in.

The key is read from settings when the client is built and never written to a row or a log.
"""
from __future__ import annotations

import hashlib
import json
import logging
import random
import time
from typing import Any, Callable

import openai
from django.conf import settings
from openai.types.chat import ChatCompletion

from generation.llm import accounting, capabilities
from generation.llm.limiter import limiter_for
from generation.llm.providers import client_for
from generation.llm.config import (
    NO_ENDPOINT_MESSAGE,
    LLMFailed,
    LLMResult,
    LLMUnavailable,
    cost_of,
    public_endpoint,
    stage_model,
)
from generation.models import LLMCall, LLMOutcome, OutputForm
from generation.redact import redact, redact_json
from generation.llm.config import endpoint_api_key, endpoint_base_url


# The client's HTTP library logs every request line at INFO; keep them (and any header) out.
for _name in ("httpx2", "httpcore2"):
    logging.getLogger(_name).setLevel(logging.WARNING)

# --------------------------------------------------------------------------- concurrency

# Asks the client for the raw reply (headers and status) as well as the parsed completion.
_RAW = {"headers": {"X-Stainless-Raw-Response": "true"}}


def _client(base_url: str, api_key: str, timeout: float) -> openai.OpenAI:
    return client_for(base_url, api_key, timeout)  # OpenAI-compatible or Azure (providers.py)


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


def cache_key(request: dict[str, Any], sample: int) -> str:
    """The cache key: the whole request (model, messages, temperature, format, tools), plus the
    sample index when temperature > 0 — n samples of one prompt are n different samples."""
    if float(request.get("temperature") or 0.0) > 0 and sample:
        return request_hash({**request, "sample": sample})
    return request_hash(request)


def _findings_fields(findings: list[tuple[str, str]]) -> dict[str, Any]:
    if not findings:
        return {}
    return {"rules": sorted({rule for rule, _ in findings}),
            "error": redact("; ".join(f"{rule}: {message}" for rule, message in findings[:10]))[:2000]}


def _tool_calls(message: Any) -> list[dict[str, str]]:
    out = []
    for call in getattr(message, "tool_calls", None) or []:
        fn = getattr(call, "function", None)
        if fn is not None:
            out.append({"name": fn.name, "arguments": fn.arguments or ""})
    return out


class _SchemaRefused(Exception):
    """The endpoint answered 400 to a JSON Schema response_format: send the call again without it."""


def chat(**kwargs: Any) -> LLMResult:
    """One chat completion with retries, bounded concurrency, logging and caching (see `_chat`).

    A call with a `schema` that the endpoint refuses is sent again in the prompt-only form
    (`response_format` as given, usually json_object); the refusal is one recorded attempt.
    """
    try:
        return _chat(**kwargs)
    except _SchemaRefused:
        return _chat(**{**kwargs, "schema": None})


def _from_cache(digest: str, check, job, common: dict, model: str) -> LLMResult | None:
    """The stored validated reply to this request, recorded as a cache hit; None when there is none."""
    hit = (LLMCall.objects.filter(prompt_hash=digest, outcome=LLMOutcome.OK, validated=True)
           .order_by("-id").values("response", "tool_calls").first())
    if hit is None:
        return None
    findings = check(hit["response"] or "") if check else []
    if findings:
        # Validated once, failing now (the validators changed): never serve that entry again.
        LLMCall.objects.filter(prompt_hash=digest, validated=True).update(validated=False)
    call = accounting.record(job, **common, attempt=1, response=hit["response"], tool_calls=hit["tool_calls"],
                             outcome=LLMOutcome.INVALID if findings else LLMOutcome.CACHED,
                             validated=not findings, **_findings_fields(findings))
    return LLMResult(content=hit["response"], tool_calls=hit["tool_calls"], cached=True, call_id=call.pk,
                     model=model, prompt_tokens=0, completion_tokens=0, findings=findings)


def _chat(
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
    sample: int = 0,
    repair: int = 0,
    validated: bool = False,
    check: Callable[[str], list[tuple[str, str]]] | None = None,
    resample: int = 0,
    max_in_flight: int | None = None,
    schema: dict | None = None,
    batch: bool = False,
) -> LLMResult:
    """One chat completion with retries, bounded concurrency, logging and caching.

    `job` is a GenerationJob, a job id or None. Raises LLMUnavailable when no endpoint is set and
    LLMFailed when the call fails for good (every attempt is an LLMCall row either way).

    Each attempt's row is written `in_flight` before the request goes out and completed after, so
    a killed worker leaves a row behind (see accounting.calls_mark_lost). Cache hits are served
    only from rows marked `validated` — the caller (repair.ask) marks a reply validated once it
    parsed and passed its stage, through `check(reply) -> findings` which runs before the row is
    completed, so the outcome (ok + validated, or invalid + rule ids) is written in the same
    update; `validated=True` marks a reply valid at once (callers with no validator).

    Each attempt first takes a lease from the endpoint's shared limiter (limiter.py; at most
    `max_in_flight` requests in flight, default LLM_MAX_CONCURRENCY), and only then writes its row,
    so a row in flight is a request that was sent. A job that stopped (failed, cancelling, its cost
    limit reached) sends nothing more: LLMStopped. `resample` > 0 marks a fresh conversation
    started after an item's repairs were spent (repair.ask); it is part of the cache key.
    """
    base_url = base_url or endpoint_base_url()
    if not base_url:
        raise LLMUnavailable(NO_ENDPOINT_MESSAGE)
    api_key = api_key if api_key is not None else endpoint_api_key()
    model = model or stage_model(stage)
    timeout = timeout or settings.OPENAI_TIMEOUT
    use_cache = settings.LLM_CACHE if use_cache is None else use_cache
    secrets = [api_key] if api_key else []

    form = OutputForm.JSON if response_format else OutputForm.TEXT
    known = None
    if schema and settings.LLM_STRUCTURED_OUTPUTS:
        known = capabilities.structured_outputs(base_url, model)
        if known is not False:
            form = OutputForm.SCHEMA
            response_format = {"type": "json_schema",
                               "json_schema": {"name": schema["name"], "strict": True, "schema": schema["schema"]}}
    request: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
    if response_format:
        request["response_format"] = response_format
    if tools:
        request["tools"] = tools
    digest = cache_key({**request, "resample": resample} if resample else request, sample)
    logged_request = redact_json({**request, "endpoint": public_endpoint(base_url)}, secrets)
    common = dict(stage=stage, key=key, model=model, template=template, template_version=template_version,
                  prompt_hash=digest, request=logged_request, sample=sample, repair=repair, resample=resample,
                  output_form=form)

    if batch:
        from generation.llm import batches

        return batches.reply_or_defer(job=job, body=request, meta=common, check=check, validated=validated,
                                      cached=(lambda: _from_cache(digest, check, job, common, model)) if use_cache
                                      else None)
    if use_cache:
        hit = _from_cache(digest, check, job, common, model)
        if hit is not None:
            return hit

    client = _client(base_url, api_key, timeout)
    limiter = limiter_for(base_url, model)
    kwargs = request
    estimate = accounting.estimate_prompt_tokens(messages)

    attempts = settings.LLM_MAX_RETRIES + 1
    for attempt in range(1, attempts + 1):
        lease = limiter.acquire(cap=max_in_flight or settings.LLM_MAX_CONCURRENCY, tokens=estimate)
        status, headers = None, None
        try:
            accounting.job_may_spend(job)  # raises LLMStopped: the job stopped while this waited
            # The row is committed after the lease and right before the request goes out: a row
            # left in flight by a killed worker is a request the endpoint received.
            call_id = accounting.call_start(job, **common, attempt=attempt, prompt_tokens=estimate)
            started = time.monotonic()
            try:
                # The client's documented low-level POST: `chat.completions.create` would first
                # walk every message through its TypedDict transform, a third of its CPU per call;
                # our request is plain JSON already. Errors, auth and parsing are the same. The raw
                # reply gives the limiter its status and x-ratelimit headers.
                raw = client.post("/chat/completions", body=kwargs, cast_to=ChatCompletion, options=_RAW)
                status, headers = raw.status_code, raw.headers
                completion = raw.parse()
                message = completion.choices[0].message
                content = message.content
                calls = _tool_calls(message)
                usage = completion.usage
                error: BaseException | None = None
            except Exception as exc:  # classified below; unknown errors are not retried
                error = exc
                response = getattr(exc, "response", None)
                if isinstance(exc, openai.APIStatusError) and response is not None:
                    status, headers = exc.status_code, response.headers
                elif status is not None:
                    status = None  # a 200 whose body could not be read tells the limiter nothing
        finally:
            limiter.release(lease, status=status, headers=headers, default_block=backoff_delay(1, None))
        latency_ms = int((time.monotonic() - started) * 1000)
        if error is None:
            reported = getattr(usage, "prompt_tokens", None)
            pt = reported if reported else estimate
            ct = getattr(usage, "completion_tokens", 0) or 0
            cost = cost_of(model, pt, ct)
            if form == OutputForm.SCHEMA and known is None:
                capabilities.remember(base_url, model, structured_outputs=True)
            findings = check(content or "") if check else []
            accounting.call_finish(call_id, job, response=redact(content or "", secrets), tool_calls=calls, status_code=status,
                                   prompt_tokens=pt, completion_tokens=ct, latency_ms=latency_ms,
                                   outcome=LLMOutcome.INVALID if findings else LLMOutcome.OK, cost_usd=cost,
                                   tokens_estimated=not reported, validated=bool(validated or check) and not findings,
                                   **_findings_fields(findings))
            return LLMResult(content=content, tool_calls=calls, prompt_tokens=pt, completion_tokens=ct,
                             latency_ms=latency_ms, cached=False, call_id=call_id, model=model, cost_usd=cost,
                             findings=findings)
        retryable, why, retry_after = _classify(error)
        why = redact(why, secrets)
        if form == OutputForm.SCHEMA and capabilities.refused_schema(status, why):
            accounting.call_finish(call_id, job, latency_ms=latency_ms, status_code=status, outcome=LLMOutcome.RETRIED,
                                   error=f"structured outputs refused ({why[:1500]}); sent again in the prompt-only form",
                                   prompt_tokens=0, tokens_estimated=False)
            capabilities.remember(base_url, model, structured_outputs=False)
            raise _SchemaRefused()
        last = attempt == attempts or not retryable
        # A request that got no usable reply still cost its prompt (estimated): count it.
        accounting.call_finish(call_id, job, latency_ms=latency_ms, error=why[:2000], status_code=status,
                               outcome=LLMOutcome.ERROR if last else LLMOutcome.RETRIED,
                               prompt_tokens=0, tokens_estimated=False)
        if last:
            reason = (f"{why} (after {attempt} attempts)" if retryable else f"{why} (not retried)")
            raise LLMFailed(reason, call_id=call_id)
        time.sleep(backoff_delay(attempt, retry_after))
    raise AssertionError("unreachable")

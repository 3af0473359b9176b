"""Asking an HTTP agent (or an OpenAI-compatible endpoint) for its next action, with the standard
library only: the standalone runner needs neither Django nor the `openai` package.

Transient failures (HTTP 429 and 5xx, connection errors, timeouts) are retried with exponential
backoff (honouring Retry-After) up to `retries` times. What still fails is an *outage* action
(:func:`evaluation.reader.outage`: no answer, with the reason); an answer that came back is read by
:func:`evaluation.reader.read_http`. The defaults (20 s, one retry) bound a hung agent to about
40 s per test; the callers' circuit breaker stops a run after consecutive outages. A semaphore
caps the requests in flight.
"""
from __future__ import annotations

import http.client
import json
import random
import socket
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from evaluation.protocol import openai_messages, request_body
from evaluation.reader import offered_names, outage, read_http

RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
MAX_BACKOFF = 20.0
DEFAULT_TIMEOUT = 20.0
DEFAULT_RETRIES = 1


@dataclass
class Reply:
    action: dict[str, Any]
    raw: str
    latency_ms: int
    attempts: int


@dataclass
class HttpAgent:
    """`kind` "http": the almita-agent/1 protocol at `url`. `kind` "openai": POST
    {url}/chat/completions with `model`, the conversation, the tools and `system_prompt` only."""

    url: str
    kind: str = "http"
    model: str = ""
    system_prompt: str = ""
    knowledge: str = "procedure"
    release: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    retries: int = DEFAULT_RETRIES
    concurrency: int = 8
    backoff: float = 0.5
    temperature: float = 0.0
    breaker: Any = None  # an evaluation.run_health.Breaker shared by the run's requests, or None

    def __post_init__(self) -> None:
        if self.kind not in ("http", "openai"):
            raise ValueError(f"agent kind {self.kind!r}: expected 'http' or 'openai'")
        if not self.url.startswith(("http://", "https://")):
            raise ValueError(f"agent URL {self.url!r} must start with http:// or https://")
        self._slots = threading.BoundedSemaphore(max(1, int(self.concurrency)))

    # ------------------------------------------------------------------ bodies

    def body(self, data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if self.kind == "http":
            return self.url, request_body(data, knowledge=self.knowledge, release=self.release)
        messages = openai_messages(data.get("context") or [])
        if self.system_prompt.strip():
            messages = [{"role": "system", "content": self.system_prompt}] + messages
        req: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        tools = request_body(data, knowledge="none")["tools"]
        if tools:
            req["tools"] = tools
        return self.url.rstrip("/") + "/chat/completions", req

    # ------------------------------------------------------------------ transport

    def _post(self, url: str, payload: bytes) -> tuple[int, bytes, float | None]:
        """(status, body, Retry-After seconds). Raises OSError / TimeoutError on transport errors."""
        req = urllib.request.Request(url, data=payload, method="POST", headers={
            "Content-Type": "application/json", "Accept": "application/json", **self.headers})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, resp.read(), None
        except urllib.error.HTTPError as exc:
            retry_after = None
            try:
                retry_after = float(exc.headers.get("Retry-After", ""))
            except (TypeError, ValueError):
                pass
            return exc.code, exc.read() or b"", retry_after

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, MAX_BACKOFF)
        return min(self.backoff * (2 ** attempt), MAX_BACKOFF) * (0.5 + random.random() / 2)

    def ask(self, data: dict[str, Any]) -> Reply:
        """The agent's action for one test (never raises for agent-side failures)."""
        url, req = self.body(data)
        payload = json.dumps(req, ensure_ascii=False).encode()
        names = offered_names(data)
        started = time.monotonic()
        attempts, last = 0, ""
        with self._slots:
            while True:
                if self.breaker is not None and self.breaker.tripped:
                    if not attempts:  # never asked: the run stopped
                        return Reply(outage(f"not asked: {self.breaker.tripped}"), "", 0, 0)
                    break  # no more retries either
                attempts += 1
                retry_after = None
                try:
                    status, body, retry_after = self._post(url, payload)
                except (TimeoutError, socket.timeout):
                    last = f"no answer within {self.timeout:g} s"
                except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
                    reason = getattr(exc, "reason", exc)
                    if isinstance(reason, (TimeoutError, socket.timeout)):
                        last = f"no answer within {self.timeout:g} s"
                    else:
                        last = f"connection failed: {reason or type(exc).__name__}"
                else:
                    if status not in RETRY_STATUSES:
                        if self.breaker is not None and 200 <= status < 300:
                            self.breaker.success()
                        elif self.breaker is not None:
                            self.breaker.failure(f"HTTP {status}")
                        latency = int((time.monotonic() - started) * 1000)
                        return Reply(read_http(status, body, names), body.decode("utf-8", "replace")[:20000],
                                     latency, attempts)
                    last = f"HTTP {status}: {body.decode('utf-8', 'replace').strip()[:200]}"
                if self.breaker is not None and not last.startswith("HTTP 429"):  # rate limits are not outages
                    self.breaker.failure(last)
                if attempts > self.retries:
                    break
                time.sleep(self.delay(attempts - 1, retry_after))
        latency = int((time.monotonic() - started) * 1000)
        tries = f" (after {attempts} attempts)" if attempts > 1 else ""
        return Reply(outage(f"{last}{tries}"), "", latency, attempts)


def auth_headers(header: str, secret: str | None) -> dict[str, str]:
    """`Authorization: Bearer <secret>` by default; any other header carries the secret as is."""
    if not secret:
        return {}
    header = (header or "Authorization").strip()
    return {header: f"Bearer {secret}" if header.lower() == "authorization" else secret}

"""A simulated rate limit for the fake OpenAI server: R requests per minute, 429 beyond.

The endpoint keeps a token bucket the way OpenAI describes its limits: `limit` requests a minute,
refilled continuously at limit/60 per second from the first request on, holding at most `burst`
(default: the whole minute, as OpenAI's headers imply) and `start` at first (default: full). A request that finds less than one token is answered 429 with
`retry-after-ms`/`retry-after` (the time until one token is back); every reply carries
`x-ratelimit-limit-requests`, `x-ratelimit-remaining-requests` and `x-ratelimit-reset-requests`
(time until the bucket is full, written like OpenAI's "1s", "6m0s", "20ms"). `log` keeps each
request's arrival time and whether it was admitted, for benches and tests.
"""
from __future__ import annotations

import json
import math
import threading
import time

from tests.fake_replies import Reply


def openai_duration(seconds: float) -> str:
    if seconds < 1:
        return f"{int(round(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:.3f}s" if minutes else f"{rest:.3f}s"


class RateLimit:
    def __init__(self, per_minute: float, *, burst: float | None = None, start: float | None = None) -> None:
        if per_minute <= 0:
            raise ValueError("per_minute must be positive")
        self.per_minute = per_minute
        self.rate = per_minute / 60.0
        self.burst = burst if burst is not None else per_minute
        self.level = self.burst if start is None else start
        self.at: float | None = None  # the bucket starts filling at the first request
        self.log: list[tuple[float, bool]] = []
        self._lock = threading.Lock()

    def admit(self) -> dict[str, str] | None:
        """The headers of an admitted request, or None when it must be answered 429 (see `refused`)."""
        with self._lock:
            now = time.monotonic()
            self.level = min(self.burst, self.level + self.rate * (now - (self.at if self.at is not None else now)))
            self.at = now
            ok = self.level >= 1
            if ok:
                self.level -= 1
            self.log.append((now, ok))
            return self._headers() if ok else None

    def _headers(self) -> dict[str, str]:
        return {"x-ratelimit-limit-requests": str(int(self.burst)),
                "x-ratelimit-remaining-requests": str(int(math.floor(self.level))),
                "x-ratelimit-reset-requests": openai_duration((self.burst - self.level) / self.rate)}

    def refused(self) -> Reply:
        with self._lock:
            wait = max(0.0, (1 - self.level) / self.rate)
            headers = {**self._headers(), "retry-after-ms": str(int(math.ceil(wait * 1000))),
                       "retry-after": str(max(1, math.ceil(wait)))}
        return Reply(status=429, headers=headers, raw_body=json.dumps({"error": {
            "message": f"Rate limit reached: {self.per_minute:g} requests per minute (fake)",
            "type": "requests", "code": "rate_limit_exceeded"}}))

    def counts(self) -> tuple[int, int]:
        """(admitted, refused) so far."""
        with self._lock:
            admitted = sum(1 for _, ok in self.log if ok)
            return admitted, len(self.log) - admitted

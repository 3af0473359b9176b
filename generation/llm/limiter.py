"""Adaptive rate control: one limiter per (endpoint, model), shared by every worker process.

A request takes a *lease* before it is sent and gives it back with what the reply said. The shared
state (limiter_store.py: Redis on the full stack, a locked file on the embedded default) holds:

* the **window**: how many requests may be in flight at once. It starts at the job's maximum,
  is halved on a 429 that names no exhausted limit (multiplicative decrease, at most once per round trip: only a request sent
  after the last decrease can decrease it again) and grows by 1/window per reply that came back
  while the window was full (additive increase: about one more request per round trip; again
  only for requests sent after the last decrease), never above the maximum of the job asking;
* **blocked until**: nothing is sent before the time a 429's ``Retry-After`` (or
  ``retry-after-ms``) names, or the reset time of a limit the endpoint reported exhausted;
* one **bucket** per limit the endpoint announces (``x-ratelimit-{limit,remaining,reset}-requests``
  and ``-tokens``): a mirror of the endpoint's token bucket, refilled at the rate the headers imply
  ((limit − remaining) ÷ reset), lowered to the reported remaining when that is lower (other
  clients share the key), and drawn from before each request (1 request; the prompt's estimated
  tokens). A request waits until its bucket holds enough, so an endpoint allowing R requests a
  minute is sent about R a minute instead of a burst followed by a storm of 429s;
* **leases** with their owner (host:pid) and an expiry, so a worker killed while holding some
  does not shrink the window for good: a dead process's leases (this host) or an expired one
  (any host) are dropped.

Within one process only one thread polls the shared state per limiter (the others wait behind a
lock) and a lease given back wakes it at once, so the state is read at most a few hundred times a
second however many threads wait.
"""
from __future__ import annotations

import math
import os
import re
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Mapping

WINDOW_POLL = 0.005  # seconds between looks at the shared state while the window is full
MAX_SLEEP = 0.25  # a waiter looks again at least this often (another process may have changed it)
DEFAULT_BLOCK = 1.0  # seconds to hold back after a 429 that names no time
DIMENSIONS = ("requests", "tokens")

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_duration(text: str | None) -> float | None:
    """Seconds in '1s', '6m0s', '20ms', '1m30.5s', '2h' or a plain number; None when unreadable."""
    if text is None:
        return None
    text = str(text).strip()
    try:
        number = float(text)
    except ValueError:
        pass
    else:
        return number if math.isfinite(number) and number >= 0 else None
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text.replace(" ", ""):
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * scale[u] for n, u in parts)


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """`retry-after-ms` or `retry-after` (seconds) in seconds; None when absent or an HTTP date."""
    if not headers:
        return None
    ms = _number(headers.get("retry-after-ms"))
    if ms is not None:
        return ms / 1000.0
    return _number(headers.get("retry-after"))


def read_limits(headers: Mapping[str, str] | None) -> dict[str, tuple[float | None, float | None, float | None]]:
    """{dimension: (limit, remaining, reset seconds)} for the x-ratelimit headers present."""
    out = {}
    for dim in DIMENSIONS:
        if not headers:
            break
        remaining = _number(headers.get(f"x-ratelimit-remaining-{dim}"))
        if remaining is None:
            continue
        out[dim] = (_number(headers.get(f"x-ratelimit-limit-{dim}")), remaining,
                    parse_duration(headers.get(f"x-ratelimit-reset-{dim}")))
    return out


# --------------------------------------------------------------------------- decisions on the state
# Plain functions on the stored dict and a time, so they can be tested without clocks or processes.


def _alive(owner: str, host: str) -> bool:
    owner_host, _, pid = owner.rpartition(":")
    if owner_host != host or not pid.isdigit() or int(pid) == os.getpid():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _purge(state: dict, now: float, host: str) -> None:
    leases = state.setdefault("leases", {})
    for lid in [lid for lid, lease in leases.items() if lease["expires"] < now or not _alive(lease["owner"], host)]:
        del leases[lid]


def _refill(bucket: dict, now: float) -> None:
    if bucket.get("level") is not None and bucket.get("rate"):
        level = bucket["level"] + bucket["rate"] * max(0.0, now - bucket["at"])
        bucket["level"] = min(level, bucket["cap"]) if bucket.get("cap") else level
    bucket["at"] = now


def try_acquire(state: dict, now: float, *, cap: int, tokens: int, owner: str, ttl: float,
                host: str) -> tuple[str | None, float]:
    """(lease id, 0) when a request may go now, else (None, seconds worth waiting)."""
    _purge(state, now, host)
    if "window" not in state:
        state["window"] = float(cap)
    leases = state["leases"]
    if now < state.get("blocked_until", 0.0):
        return None, state["blocked_until"] - now
    if len(leases) >= min(math.floor(state["window"]), cap):
        return None, WINDOW_POLL
    costs = {"requests": 1.0, "tokens": float(tokens)}
    wait = 0.0
    for dim, bucket in state.setdefault("buckets", {}).items():
        _refill(bucket, now)
        need = min(costs[dim], bucket.get("cap") or costs[dim])
        if bucket.get("level") is not None and bucket["level"] < need:
            if bucket.get("rate"):
                wait = max(wait, (need - bucket["level"]) / bucket["rate"])
            elif bucket.get("full_at", 0.0) > now:
                wait = max(wait, bucket["full_at"] - now)  # no rate known: until the reset it named
            else:
                bucket["level"] = None  # past that reset: unknown again until the next reply says
    if wait > 0:
        return None, max(wait, 0.001)
    took = {}
    for dim, bucket in state["buckets"].items():
        if bucket.get("level") is not None:
            took[dim] = min(costs[dim], bucket.get("cap") or costs[dim])
            bucket["level"] -= took[dim]
    lease = uuid.uuid4().hex[:16]
    state["seq"] = state.get("seq", 0) + 1  # the order requests were sent in
    leases[lease] = {"owner": owner, "sent": now, "expires": now + ttl, "cap": cap, "seq": state["seq"], "took": took}
    return lease, 0.0


def _sync_bucket(state: dict, dim: str, limit: float | None, remaining: float, reset: float | None,
                 now: float, sent_at: float, seq: int) -> None:
    bucket = state.setdefault("buckets", {}).setdefault(dim, {"level": None, "at": now, "rate": None, "cap": None})
    _refill(bucket, now)
    if limit:
        bucket["cap"] = limit
        if reset and limit > remaining:
            bucket["rate"] = (limit - remaining) / reset
    # The endpoint counted this request but not ours sent after it; those that already came off our
    # mirror are still to come off its figure (a refused one is given back by its 429).
    later = sum(lease["took"].get(dim, 0) for lease in state.get("leases", {}).values() if lease["seq"] > seq)
    # It counted when the request arrived (about when it was sent), and has refilled since.
    seen = remaining + (bucket["rate"] or 0.0) * max(0.0, now - sent_at)
    seen = min(seen, bucket["cap"]) if bucket.get("cap") else seen
    seen -= later
    bucket["level"] = seen if bucket["level"] is None else min(bucket["level"], seen)
    if reset is not None:
        bucket["full_at"] = now + reset


def settle(state: dict, now: float, lease: str, *, status: int | None, headers: Mapping[str, str] | None,
           default_block: float = DEFAULT_BLOCK) -> None:
    """Give a lease back with the reply's status (None: no HTTP reply) and headers."""
    held = state.setdefault("leases", {}).pop(lease, None)
    sent_at, seq = (held["sent"], held["seq"]) if held else (now, state.get("seq", 0))
    cap = held["cap"] if held else max(1, math.floor(state.get("window", 1.0)))
    window = state.get("window", float(cap))
    limits = read_limits(headers)
    if status == 429:
        # A 429 naming an exhausted limit is the rate, which the buckets now pace; any other (a
        # server bounding concurrency, or limits it does not describe) shrinks the window.
        paced = any(rem is not None and rem < 1 for _l, rem, _r in limits.values())
        if not paced and sent_at >= state.get("decreased_at", 0.0):
            state["window"] = max(1.0, window / 2)
            state["decreased_at"] = now
        wait = retry_after(headers)
        if wait is None:
            exhausted = [reset for _l, rem, reset in limits.values() if rem is not None and rem < 1 and reset]
            wait = max(exhausted) if exhausted else default_block
        state["blocked_until"] = max(state.get("blocked_until", 0.0), now + wait)
        state["rate_limited"] = state.get("rate_limited", 0) + 1
        for dim, amount in (held or {}).get("took", {}).items():  # refused: the endpoint did not count it
            bucket = state.get("buckets", {}).get(dim)
            if bucket and bucket.get("level") is not None:
                _refill(bucket, now)
                bucket["level"] += amount
    elif status is not None and 200 <= status < 300:
        # Grow only on what was sent with the window as it is now (not during a decrease's echo).
        if len(state["leases"]) + 1 >= math.floor(window) and sent_at >= state.get("decreased_at", 0.0):
            state["window"] = min(float(cap), window + 1.0 / window)
    for dim, (limit, remaining, reset) in limits.items():
        _sync_bucket(state, dim, limit, remaining, reset, now, sent_at, seq)


# --------------------------------------------------------------------------- the limiter


@dataclass
class Lease:
    id: str
    limiter: "Limiter"
    released: bool = False


class Limiter:
    """The limiter of one (endpoint, model); `store` is shared by every process (limiter_store.py)."""

    _local: dict[str, tuple[threading.Lock, threading.Condition]] = {}
    _local_lock = threading.Lock()

    def __init__(self, key: str, store: Any, *, host: str, ttl: float) -> None:
        self.key = key
        self.store = store
        self.host = host
        self.ttl = ttl
        with Limiter._local_lock:
            if key not in Limiter._local:
                Limiter._local[key] = (threading.Lock(), threading.Condition())
            self._gate, self._wake = Limiter._local[key]

    def acquire(self, *, cap: int, tokens: int = 0) -> Lease:
        """Wait until a request may be sent (window, Retry-After, buckets); returns its lease."""
        owner = f"{self.host}:{os.getpid()}"
        with self._gate:  # one poller per process and limiter; the others queue here
            while True:
                lease, wait = self.store.update(self.key, lambda s: try_acquire(
                    s, time.time(), cap=max(1, cap), tokens=tokens, owner=owner, ttl=self.ttl, host=self.host))
                if lease is not None:
                    return Lease(lease, self)
                with self._wake:
                    self._wake.wait(min(max(wait, 0.001), MAX_SLEEP))

    def release(self, lease: Lease, *, status: int | None = None, headers: Mapping[str, str] | None = None,
                default_block: float = DEFAULT_BLOCK) -> None:
        if lease.released:
            return
        lease.released = True
        self.store.update(self.key, lambda s: settle(s, time.time(), lease.id, status=status, headers=headers,
                                                     default_block=default_block))
        with self._wake:
            self._wake.notify_all()

    def snapshot(self) -> dict[str, Any]:
        """What the job page shows now: window, requests in flight, seconds held back, request rate."""
        state = self.store.read(self.key)
        now = time.time()
        requests = (state.get("buckets") or {}).get("requests") or {}
        live = [v for v in (state.get("leases") or {}).values() if v["expires"] >= now]
        return {"window": state.get("window"), "in_flight": len(live),
                "blocked_for": max(0.0, state.get("blocked_until", 0.0) - now),
                "per_minute": 60 * requests["rate"] if requests.get("rate") else None,
                "rate_limited": state.get("rate_limited", 0)}


_limiters: dict[str, Limiter] = {}


def limiter_key(base_url: str, model: str) -> str:
    from generation.llm.config import public_endpoint

    return f"{public_endpoint(base_url)}|{model}"


def limiter_for(base_url: str, model: str) -> Limiter:
    """The shared limiter of (endpoint, model), stored where the broker says (limiter_store.py)."""
    import socket

    from django.conf import settings

    from generation.llm.limiter_store import store_for

    key = limiter_key(base_url, model)
    store = store_for(settings.CELERY_BROKER_URL, settings.VAR_DIR)
    ident = f"{key}|{id(store)}"
    limiter = _limiters.get(ident)
    if limiter is None:
        # A lease outlives the longest a request can take; then it is dropped (a dead worker on another host).
        limiter = _limiters[ident] = Limiter(key, store, host=socket.gethostname(),
                                             ttl=settings.OPENAI_TIMEOUT + 30.0)
    return limiter

"""The adaptive limiter's decisions (generation/llm/limiter.py) on plain state, without clocks.

The last test simulates an endpoint that allows R requests a minute (a token bucket written here
from OpenAI's description, independent of the limiter's mirror of it) in virtual time, with
clients driven only by the limiter's decisions and the headers the endpoint sends back.
"""
from __future__ import annotations

import heapq
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generation.llm.limiter import parse_duration, read_limits, retry_after, settle, try_acquire
from tests.fake_ratelimit import openai_duration

HOST = "test-host"


def take(state, now, cap=8, tokens=0, owner=f"{HOST}:1"):
    return try_acquire(state, now, cap=cap, tokens=tokens, owner=owner, ttl=60.0, host="elsewhere")


@pytest.mark.parametrize("text, seconds", [
    ("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1m30.5s", 90.5), ("2h", 7200.0), ("0.75", 0.75),
    ("12", 12.0), ("1h2m3s", 3723.0), ("soon", None), ("1x", None), ("", None), (None, None), ("-3", None),
])
def test_durations_as_endpoints_write_them(text, seconds):
    assert parse_duration(text) == (pytest.approx(seconds) if seconds is not None else None)


@given(st.floats(min_value=0, max_value=86_400, allow_nan=False))
def test_duration_round_trip(seconds):
    # The fake endpoint writes durations one way (ms below a second, else minutes and seconds to the ms).
    assert parse_duration(openai_duration(seconds)) == pytest.approx(seconds, abs=0.001)


def test_headers_read():
    headers = {"retry-after": "7", "x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0",
               "x-ratelimit-reset-requests": "1s", "x-ratelimit-remaining-tokens": "900"}
    assert retry_after(headers) == 7.0
    assert retry_after({"retry-after-ms": "250", "retry-after": "1"}) == 0.25
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) is None
    assert read_limits(headers) == {"requests": (60.0, 0.0, 1.0), "tokens": (None, 900.0, None)}


def test_window_starts_at_the_maximum_and_bounds_requests_in_flight():
    state: dict = {}
    leases = [take(state, 0.0, cap=3)[0] for _ in range(3)]
    assert all(leases) and state["window"] == 3
    lease, wait = take(state, 0.0, cap=3)
    assert lease is None and 0 < wait < 0.1  # the window is full: look again soon
    settle(state, 0.1, leases[0], status=200, headers={})
    assert take(state, 0.1, cap=3)[0] is not None


def test_multiplicative_decrease_once_per_round_trip_and_retry_after_blocks_everyone():
    state: dict = {}
    leases = [take(state, 0.0)[0] for _ in range(8)]
    settle(state, 1.0, leases[0], status=429, headers={"retry-after-ms": "500"})
    assert state["window"] == 4
    # Requests sent before that decrease bring their 429s back too: no further halving.
    settle(state, 1.01, leases[1], status=429, headers={"retry-after": "0.1"})
    assert state["window"] == 4
    lease, wait = take(state, 1.2)
    assert lease is None and wait == pytest.approx(0.3)  # held back until 1.5 s
    for lid in leases[2:]:
        settle(state, 1.3, lid, status=200, headers={})
    late = take(state, 1.6)[0]
    settle(state, 1.7, late, status=429, headers={})  # sent after the decrease: halves again
    assert state["window"] == 2
    assert state["blocked_until"] == pytest.approx(1.7 + 1.0)  # no Retry-After: the default hold


def test_additive_increase_only_while_the_window_is_full_and_never_past_the_maximum():
    state = {"window": 2.0}
    a, b = take(state, 0, cap=4)[0], take(state, 0, cap=4)[0]
    settle(state, 1, a, status=200, headers={})
    assert state["window"] == pytest.approx(2.5)  # the window was full: +1/window
    settle(state, 1, b, status=200, headers={})
    assert state["window"] == pytest.approx(2.5)  # one of 2 in flight: not full, no growth
    for _ in range(50):
        leases = [take(state, 2, cap=4)[0] for _ in range(math.floor(state["window"]))]
        for lid in leases:
            settle(state, 2, lid, status=200, headers={})
    assert state["window"] == 4.0


def test_errors_without_a_reply_neither_grow_nor_shrink_the_window():
    state: dict = {}
    lid = take(state, 0, cap=1)[0]
    settle(state, 1, lid, status=None, headers=None)
    settle(state, 1, take(state, 1, cap=1)[0], status=500, headers={})
    assert state["window"] == 1.0 and not state["leases"]


def test_dead_and_expired_leases_are_dropped():
    state: dict = {}
    assert try_acquire(state, 0.0, cap=1, tokens=0, owner=f"{HOST}:999999999", ttl=60.0, host=HOST)[0]  # no such pid
    # The dead process's lease goes at once: the window of one is free again.
    assert try_acquire(state, 1.0, cap=1, tokens=0, owner="other-host:5", ttl=10.0, host=HOST)[0]
    assert list(state["leases"].values())[0]["owner"] == "other-host:5"
    # Another host's lease cannot be checked: it holds until it expires.
    assert try_acquire(state, 5.0, cap=1, tokens=0, owner=f"{HOST}:1", ttl=60.0, host=HOST)[0] is None
    assert try_acquire(state, 11.5, cap=1, tokens=0, owner=f"{HOST}:1", ttl=60.0, host=HOST)[0]


def test_requests_are_paced_by_the_announced_limit():
    state: dict = {}
    lid = take(state, 0.0)[0]
    # 60 a minute, none left, full again in 60 s: one request a second.
    settle(state, 0.1, lid, status=200, headers={"x-ratelimit-limit-requests": "60",
                                                 "x-ratelimit-remaining-requests": "0",
                                                 "x-ratelimit-reset-requests": "1m0s"})
    assert state["buckets"]["requests"]["rate"] == pytest.approx(1.0)
    lease, wait = take(state, 0.1)
    # None left when it arrived (sent at 0.0), refilling at one a second since.
    assert lease is None and wait == pytest.approx(0.9)
    assert take(state, 1.0)[0] is not None
    assert take(state, 1.5)[0] is None


def test_token_bucket_and_an_exhausted_limit_with_no_rate():
    state: dict = {}
    lid = take(state, 0.0, tokens=100)[0]
    settle(state, 0.5, lid, status=200, headers={"x-ratelimit-remaining-tokens": "50",
                                                 "x-ratelimit-reset-tokens": "2s"})
    # The endpoint named no limit, so no rate: wait until it said the tokens come back.
    lease, wait = take(state, 0.5, tokens=100)
    assert lease is None and wait == pytest.approx(2.0)


class Endpoint:
    """OpenAI-style bucket in virtual time: `per_minute` requests a minute, holding `burst`."""

    def __init__(self, per_minute: float, burst: float, level: float) -> None:
        self.rate, self.burst, self.level, self.at = per_minute / 60, burst, level, 0.0

    def request(self, now: float) -> tuple[int, dict]:
        self.level = min(self.burst, self.level + self.rate * (now - self.at))
        self.at = now
        ok = self.level >= 1
        if ok:
            self.level -= 1
        headers = {"x-ratelimit-limit-requests": str(self.burst),
                   "x-ratelimit-remaining-requests": str(math.floor(self.level)),
                   "x-ratelimit-reset-requests": f"{(self.burst - self.level) / self.rate:.3f}s"}
        if not ok:
            headers["retry-after-ms"] = str(math.ceil(1000 * (1 - self.level) / self.rate))
        return (200 if ok else 429), headers


@settings(max_examples=40, deadline=None)
@given(per_minute=st.sampled_from([30, 120, 600, 1500]), latency=st.floats(0.02, 2.0),
       cap=st.integers(1, 16), clients=st.integers(1, 24), start=st.sampled_from([0.0, 0.5, 1.0]))
def test_simulated_endpoint_sustains_its_rate_with_few_429s(per_minute, latency, cap, clients, start):
    burst = per_minute  # OpenAI's headers: the limit is the minute's allowance
    endpoint = Endpoint(per_minute, burst, level=burst * start)
    state: dict = {}
    events = [(0.0, i, "try", None) for i in range(clients)]
    parked: list[int] = []  # clients waiting for a lease to come back (the window is full)
    horizon = 30.0
    ok = refused = 0
    while events:
        now, client, kind, lease = heapq.heappop(events)
        if now > horizon:
            break
        if kind == "try":
            lid, wait = take(state, now, cap=cap)
            if lid is None:
                if len(state["leases"]) >= min(math.floor(state["window"]), cap):
                    parked.append(client)  # woken by the next reply, as a released lease wakes a thread
                else:
                    heapq.heappush(events, (now + wait, client, "try", None))
                continue
            status, headers = endpoint.request(now)
            back = now + (latency if status == 200 else 0.001)
            heapq.heappush(events, (back, client, "reply", (lid, status, headers)))
        else:
            lid, status, headers = lease
            settle(state, now, lid, status=status, headers=headers)
            ok += status == 200
            refused += status != 200
            for waiting in [client, *parked]:
                heapq.heappush(events, (now, waiting, "try", None))
            parked.clear()
    # Most a client pool can do: `cap` requests per round trip, or the endpoint's allowance.
    allowance = endpoint.rate * horizon + burst * start
    demand = min(cap, clients) / latency * (horizon - latency)  # (the last round trip is not back)
    assert ok >= 0.9 * min(allowance, demand) - 2
    # 429s only before the first reply told the clients the limit: at most one window of them.
    assert refused <= min(cap, clients)


def test_a_429_naming_an_exhausted_limit_is_paced_not_shrunk():
    state: dict = {}
    lid = take(state, 0.0, cap=6)[0]
    settle(state, 0.1, lid, status=429, headers={"x-ratelimit-limit-requests": "600",
                                                 "x-ratelimit-remaining-requests": "0",
                                                 "x-ratelimit-reset-requests": "1m0s", "retry-after-ms": "100"})
    assert state["window"] == 6  # the rate, not concurrency: the bucket paces from here
    assert state["buckets"]["requests"]["rate"] == pytest.approx(10.0)
    assert take(state, 0.15)[0] is None and take(state, 0.25)[0] is not None

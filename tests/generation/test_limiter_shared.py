"""The limiter shared by processes (file lock or Redis) and used by every LLM call (generation/llm)."""
from __future__ import annotations

import multiprocessing
import os
import threading
import time
import uuid

import pytest

from generation import llm
from generation.models import LLMCall
from tests.fake_openai import FakeOpenAI, Reply, point_settings_at
from tests.fake_ratelimit import RateLimit
from tests.generation import limiter_procs

MSG = [{"role": "user", "content": "hello"}]
REDIS_URL = os.environ.get("CELERY_BROKER_URL", "")
STORES = ["file"] + (["redis"] if REDIS_URL.startswith("redis://") else [])


def most_at_once(spans: list[tuple[float, float]]) -> int:
    """The largest number of spans open at one instant (a plain sweep over start and end points)."""
    points = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans], key=lambda p: (p[0], p[1]))
    peak = current = 0
    for _, step in points:
        current += step
        peak = max(peak, current)
    return peak


@pytest.mark.parametrize("kind", STORES)
def test_store_updates_are_atomic_across_processes(kind, tmp_path):
    key = f"count-{uuid.uuid4().hex}"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=limiter_procs.count, args=(kind, str(tmp_path), REDIS_URL, key, 150)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert limiter_procs.make_store(kind, str(tmp_path), REDIS_URL).read(key)["n"] == 600


@pytest.mark.parametrize("kind", STORES)
def test_window_is_one_for_all_processes(kind, tmp_path):
    """Three processes of four threads each, one limiter of at most three requests in flight."""
    key = f"window-{uuid.uuid4().hex}"
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=limiter_procs.hold, args=(kind, str(tmp_path), REDIS_URL, key, 3, 4, 6, out)) for _ in range(3)]
    for p in procs:
        p.start()
    spans = [s for _ in procs for s in out.get(timeout=120)]
    for p in procs:
        p.join(30)
    assert len(spans) == 3 * 4 * 6
    assert most_at_once(spans) == 3  # never more, and the limit was reached (the work overlapped)


@pytest.mark.django_db(transaction=True)
def test_retry_after_holds_back_every_request_to_the_endpoint(settings):
    arrivals: list[float] = []

    def handler(body, n):
        arrivals.append(time.monotonic())
        return Reply(status=429, headers={"retry-after-ms": "700"},
                     raw_body='{"error": {"message": "slow down"}}') if n == 0 else Reply(content="fine")

    with FakeOpenAI(handler) as fake:
        point_settings_at(settings, fake, LLM_CACHE=False, LLM_BACKOFF_BASE=0.01)
        first = threading.Thread(target=llm.chat, kwargs={"stage": "x", "messages": MSG, "model": "m"})
        first.start()
        while not arrivals:
            time.sleep(0.005)
        time.sleep(0.1)
        # Another caller of the same endpoint and model, with no 429 of its own, waits too.
        assert llm.chat(stage="x", messages=[{"role": "user", "content": "other"}], model="m").content == "fine"
        first.join()
    assert len(arrivals) == 3
    assert min(arrivals[1:]) - arrivals[0] >= 0.65
    assert list(LLMCall.objects.order_by("id").values_list("status_code", flat=True))[0] == 429


@pytest.mark.django_db(transaction=True)
def test_a_row_in_flight_is_a_request_that_was_sent(settings):
    """With one request allowed in flight, the second caller writes no row while it waits."""
    with FakeOpenAI(lambda body, n: Reply(content="ok"), latency=0.6) as fake:
        point_settings_at(settings, fake, LLM_CACHE=False, LLM_MAX_CONCURRENCY=1)
        callers = [threading.Thread(target=llm.chat, kwargs={"stage": "x", "messages": [
            {"role": "user", "content": f"q{i}"}], "model": "m"}) for i in range(2)]
        for c in callers:
            c.start()
            time.sleep(0.15)
        rows_while_waiting = LLMCall.objects.filter(outcome="in_flight").count()
        sent_while_waiting = fake.request_count
        for c in callers:
            c.join()
    assert (rows_while_waiting, sent_while_waiting) == (1, 1)
    assert list(LLMCall.objects.values_list("outcome", flat=True)) == ["ok", "ok"]


@pytest.mark.django_db(transaction=True)
def test_rate_limited_endpoint_every_429_recorded(settings):
    """An endpoint allowing 600 requests a minute, starting empty: every call ends ok, the 429s stay
    near the cold start's one window of four (a loaded CI machine let one more through at the window's
    edge; a client that ignored Retry-After and the shared pause draws dozens), and the rows' statuses
    match what the endpoint counted."""
    limit = RateLimit(600, start=0)
    with FakeOpenAI(lambda body, n: Reply(content="ok"), latency=0.05, rate_limit=limit) as fake:
        point_settings_at(settings, fake, LLM_CACHE=False, LLM_MAX_CONCURRENCY=4, LLM_MAX_RETRIES=6)
        errors: list[BaseException] = []

        def calls(worker: int) -> None:
            for i in range(10):
                try:
                    llm.chat(stage="x", messages=[{"role": "user", "content": f"{worker}-{i}"}], model="m")
                except BaseException as exc:  # noqa: BLE001 - reported below
                    errors.append(exc)

        threads = [threading.Thread(target=calls, args=(w,)) for w in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    admitted, refused = limit.counts()
    assert not errors and admitted == 60
    assert refused <= 10, f"{refused} requests answered 429 for 60 admitted"
    statuses = list(LLMCall.objects.values_list("status_code", flat=True))
    assert statuses.count(200) == admitted and statuses.count(429) == refused

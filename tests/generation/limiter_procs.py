"""Process bodies for tests/generation/test_limiter_shared.py: importable without Django set up
(a spawned process sets it up first, then imports the limiter)."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")
    import django

    django.setup()


def make_store(kind: str, folder: str, redis_url: str):
    from generation.llm.limiter_store import FileStore, RedisStore

    return FileStore(Path(folder)) if kind == "file" else RedisStore(redis_url)


def count(kind: str, folder: str, redis_url: str, key: str, n: int) -> None:
    _setup()
    store = make_store(kind, folder, redis_url)
    for _ in range(n):
        store.update(key, lambda s: s.__setitem__("n", s.get("n", 0) + 1))


def hold(kind: str, folder: str, redis_url: str, key: str, cap: int, threads: int, rounds: int, out) -> None:
    """`threads` threads each take a lease `rounds` times, hold it 20 ms, and report when."""
    _setup()
    from generation.llm.limiter import Limiter

    limiter = Limiter(key, make_store(kind, folder, redis_url), host="test", ttl=30.0)
    spans = []
    lock = threading.Lock()

    def run() -> None:
        for _ in range(rounds):
            lease = limiter.acquire(cap=cap)
            start = time.time()
            time.sleep(0.02)
            end = time.time()
            limiter.release(lease, status=200)
            with lock:
                spans.append((start, end))

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    out.put(spans)

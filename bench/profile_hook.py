"""Run a Celery worker with cProfile on every pool thread's tasks and on the consumer thread.

    python bench/profile_hook.py OUT_PREFIX -A almita_web worker ...

cProfile only sees the thread that enabled it, so each thread gets its own profiler, switched on
around each task (task_prerun / task_postrun) and, for the main thread, from worker_ready on. At
shutdown every profile is written to OUT_PREFIX.<n>.prof; `python -m pstats` or
`bench/generation.py --profile` merges them. Profiling slows the worker: compare shares, not times.
The profiled worker can die of SIGSEGV inside CPython 3.11.7's profiler: 4 of 5 runs at C 16 on
2026-11-27 (128 and 32 calls; with this timer and with the default one). The bench then says the
worker exited with code -11; run it again, or sample the worker from outside instead.
"""
from __future__ import annotations

import cProfile
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

_profiles: list[cProfile.Profile] = []
_local = threading.local()
_lock = threading.Lock()


def _mine() -> cProfile.Profile:
    prof = getattr(_local, "prof", None)
    if prof is None:
        prof = _local.prof = cProfile.Profile(time.thread_time)  # CPU, not waiting for locks or the GIL
        with _lock:
            _profiles.append(prof)
    return prof


def install(prefix: str) -> None:
    from celery.signals import task_postrun, task_prerun, worker_ready, worker_shutdown

    @task_prerun.connect(weak=False)
    def _on(**_):
        _mine().enable()

    @task_postrun.connect(weak=False)
    def _off(**_):
        _mine().disable()

    @worker_ready.connect(weak=False)
    def _main(**_):
        _mine().enable()

    @worker_shutdown.connect(weak=False)
    def _dump(**_):
        with _lock:
            for n, prof in enumerate(_profiles):
                try:
                    prof.disable()
                except Exception:  # noqa: BLE001 - another thread's profiler
                    pass
                prof.dump_stats(f"{prefix}.{n}.prof")


if __name__ == "__main__":
    install(sys.argv[1])
    from celery.__main__ import main

    sys.argv = ["celery", *sys.argv[2:]]
    sys.exit(main())

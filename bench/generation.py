"""Generation throughput benchmark (issue #4).

Run: ``.venv/bin/python bench/generation.py [--calls N] [--latency L] [--concurrency C]``.

A simulated OpenAI-compatible endpoint (the test suite's fake server on 127.0.0.1) answers every
request after a fixed latency L and serves at most C requests at once (others wait for a slot).
A real generation job whose only LLM stage makes N calls (one imported flowgraph, N sampled paths,
conversations through prompt A.6, cache off) runs through a real Celery worker process with
LLM_MAX_CONCURRENCY=C. The ideal wall time is N x L / C; the bench prints

* the job's LLM stage wall time / ideal  (target <= 1.25),
* the whole job's wall time / ideal (includes planning, the deterministic stages and tests),
* the speed-up over making the same N calls one by one through the LLM layer,
* the same ratio for the LLM layer alone (N calls from a thread pool), to separate Celery
  overhead from the layer's own.

It uses a throw-away SQLite database and the filesystem broker under a temporary folder unless
DATABASE_URL / CELERY_BROKER_URL are set in the environment.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=48, help="N, LLM calls in the job")
    parser.add_argument("--latency", type=float, default=1.0, help="L, seconds per request")
    parser.add_argument("--concurrency", type=int, default=4, help="C, requests the endpoint serves at once")
    parser.add_argument("--workers", type=int, default=0, help="worker threads (default 2 x C + 2)")
    parser.add_argument("--skip-sequential", action="store_true", help="estimate the one-by-one time as N x L")
    args = parser.parse_args()
    n, latency, cap = args.calls, args.latency, args.concurrency
    threads = args.workers or 2 * cap + 2

    var_dir = Path(tempfile.mkdtemp(prefix="almita-bench-"))
    os.environ.setdefault("ALMITA_VAR_DIR", str(var_dir))
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{var_dir / 'bench.sqlite3'}")
    os.environ.setdefault("SECRET_KEY", "bench-only-secret")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")
    os.environ["LLM_CACHE"] = "false"
    os.environ["LLM_MAX_CONCURRENCY"] = str(cap)
    os.environ["LLM_BACKOFF_BASE"] = "0.01"

    import django

    django.setup()
    from django.core.management import call_command
    from django.test.utils import override_settings

    # Build the schema straight from the models, so the bench needs no migration files.
    with override_settings(MIGRATION_MODULES={app: None for app in ("generation", "curation", "evaluation",
                                                                    "auth", "contenttypes", "sessions", "admin",
                                                                    "authtoken")}):
        call_command("migrate", run_syncdb=True, verbosity=0)

    from django.conf import settings

    from generation import llm, services
    from generation.heartbeat import heartbeat_send
    from generation.models import LLMCall, StageProgress, WorkerHeartbeat
    from tests.fake_openai import FakeOpenAI, Reply
    from tests.generation.scripts import conversation_for, import_document

    with FakeOpenAI(lambda body, i: Reply(content=conversation_for(body)), latency=latency,
                    max_concurrency=cap) as fake:
        settings.OPENAI_BASE_URL = fake.base_url
        settings.OPENAI_API_KEY = "bench-key"
        env = dict(os.environ, OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="bench-key")
        log = open(var_dir / "worker.log", "ab")
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "almita_web", "worker", "--loglevel=WARNING", "--pool=threads",
             f"--concurrency={threads}", "--without-gossip", "--without-mingle", "--without-heartbeat"],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            nonce = heartbeat_send()
            deadline = time.monotonic() + 60
            while not WorkerHeartbeat.objects.filter(nonce=nonce).exists():
                if time.monotonic() > deadline or worker.poll() is not None:
                    print("the worker did not start; see", var_dir / "worker.log")
                    return 2
                time.sleep(0.05)

            started = time.monotonic()
            job = services.job_create(config={"paths": n, "conversations": "llm", "sampler": "random", "seed": 1},
                                      import_data=import_document(), name="bench")
            deadline = time.monotonic() + 60 + 20 * n * latency
            while True:
                job.refresh_from_db()
                if job.is_terminal:
                    break
                if worker.poll() is not None or time.monotonic() > deadline:
                    print(f"job {job.pk} stuck in {job.status}: the worker "
                          f"{'died' if worker.poll() is not None else 'is too slow'}; see {var_dir / 'worker.log'}")
                    return 2
                time.sleep(0.02)
            job_wall = time.monotonic() - started
            stage = StageProgress.objects.get(job=job, stage="conversations")
            stage_wall = (stage.finished_at - stage.started_at).total_seconds()
            calls = LLMCall.objects.filter(job=job, outcome="ok").count()
        finally:
            worker.terminate()
            worker.wait(20)

        if job.status != "succeeded" or calls != n:
            print(f"job {job.status} with {calls} calls (expected {n}): {job.error}")
            return 1

        # The LLM layer alone: N calls from a thread pool, then N calls one by one.
        messages = [{"role": "user", "content": "path: [N0]"}]

        def one(i: int) -> None:
            llm.chat(stage="bench", messages=[{**messages[0], "content": f"path: [N{i}]"}], model="m")

        t0 = time.monotonic()
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, range(n)))
        layer_wall = time.monotonic() - t0
        if args.skip_sequential:
            sequential = n * latency
        else:
            t0 = time.monotonic()
            for i in range(n):
                one(i)
            sequential = time.monotonic() - t0

    ideal = n * latency / cap
    print(f"simulated endpoint: latency {latency:.3f} s, concurrency cap C={cap}; job of N={n} LLM calls; "
          f"worker threads {threads}; broker {settings.CELERY_BROKER_URL.split(':', 1)[0]}; "
          f"database {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}")
    print(f"ideal N x L / C                     {ideal:8.2f} s")
    print(f"LLM stage through Celery            {stage_wall:8.2f} s   ratio {stage_wall / ideal:5.2f}  (target <= 1.25)")
    print(f"whole job (all stages, tests)       {job_wall:8.2f} s   ratio {job_wall / ideal:5.2f}")
    print(f"LLM layer alone (thread pool)       {layer_wall:8.2f} s   ratio {layer_wall / ideal:5.2f}")
    print(f"one by one                          {sequential:8.2f} s" + ("   (estimated N x L)" if args.skip_sequential else ""))
    print(f"speed-up over one by one: LLM stage {sequential / stage_wall:5.2f}x, whole job {sequential / job_wall:5.2f}x "
          f"(ideal {cap}x); peak requests in flight {fake.peak_in_flight}")
    return 0 if stage_wall / ideal <= 1.25 else 1


if __name__ == "__main__":
    sys.exit(main())

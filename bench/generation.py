"""Generation benchmark: yield under faults, overhead against a fast endpoint (issues #4, #12), and
an endpoint's rate limit (issue #32).

Run: ``.venv/bin/python bench/generation.py [--part yield|overhead|rate|structured|economy|all] [--calls N]
[--latency L] [--concurrency C ...] [--processes K] [--profile] [--per-minute R]``.
The rate part is described in bench/generation_rate.py, the structured part (structured outputs:
repairs per 100 items with and without the schema) in bench/generation_structured.py, the economy
part (the paper's configuration vs ours) in bench/generation_economy.py.

Both parts run real generation jobs through a real Celery worker process against the test suite's
fake OpenAI-compatible server on 127.0.0.1, on a throw-away SQLite database and the filesystem
broker under a temporary folder (unless DATABASE_URL / CELERY_BROKER_URL are set).

**Yield under faults.** The same job (10 intents, 2 procedures each, 2 paths per graph, A.6
conversations, cache off, same seed) runs at fault rates 0, 0.1 and 0.3. Faults are drawn at random
per request with no cap on how many come in a row: 429s, 5xx, a body cut off mid-JSON (transport),
and HTTP-200 replies whose content is wrong-shape JSON, truncated JSON or broken graph text. Printed:
tests at rate r ÷ tests at rate 0, and HTTP requests at rate r ÷ requests at rate 0
(targets at 0.3: yield >= 0.98 costing <= 1.5x).

**Overhead.** A job whose only LLM stage makes about N calls (N/2 imported flowgraphs, their
two distinct paths each, A.6 conversations, cache off) runs against an endpoint that answers after L seconds and serves at
most C requests at once, with LLM_MAX_CONCURRENCY=C. The ideal is N x L / C; printed are the LLM
stage's wall time ÷ ideal (targets: <= 1.15 at L=0.25, C=8; <= 1.25 at C=16) and the whole job's,
the worker processes' CPU per LLM item (all stages' CPU ÷ N: deterministic enough to compare
changes on a busy machine), this process's CPU (the fake endpoint), and each stage's wall time.
It also checks exactly-once: N items must make N requests. ``--processes K`` runs K worker
processes sharing the threads (2C+2, or BENCH_THREADS) and C (one limiter for all of them); ``--profile`` runs them under cProfile
(CPU time per thread, bench/profile_hook.py) and prints the merged top functions.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.generation_common import THREADS, Worker, fault_handler, setup, start_workers  # noqa: E402

YIELD_JOB = {"intents": 10, "procedures_per_intent": 2, "paths": 2, "conversations": "llm", "seed": 3,
             "cache": False}


def yield_part(var_dir: Path, rates: list[float], fault_seed: int = 12) -> dict:
    from django.conf import settings

    from generation import services
    from generation.models import LLMCall, StageProgress, Test
    from tests.fake_openai import FakeOpenAI
    from tests.generation.scripts import StageScript

    results = {}
    with FakeOpenAI(StageScript()) as fake:
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "bench-key", "LLM_MAX_RETRIES": "4",
               "LLM_REPAIR_ATTEMPTS": "2", "LLM_RESAMPLES": "1", "LLM_MAX_CONCURRENCY": "8"}
        settings.OPENAI_BASE_URL = fake.base_url
        worker = Worker(var_dir, env, threads=10)
        try:
            for rate in rates:
                fake.set_handler(fault_handler(StageScript(), rate, seed=fault_seed))
                fake.reset()
                job = services.job_create(config=YIELD_JOB, name=f"yield at fault rate {rate}")
                job = worker.wait(job, 600)
                repaired = sum(StageProgress.objects.filter(job=job).values_list("repaired", flat=True))
                resampled = sum(StageProgress.objects.filter(job=job).values_list("resampled", flat=True))
                results[rate] = {"tests": Test.objects.filter(job=job).count(), "requests": fake.request_count,
                                 "status": job.status, "repaired": repaired, "resampled": resampled,
                                 "rows": LLMCall.objects.filter(job=job).count()}
        finally:
            worker.stop()
    base = results[rates[0]]
    print(f"yield under faults (job {YIELD_JOB}; retries 4, repairs 2, resamples 1; random faults (seed "
          f"{fault_seed}), any number in a row)")
    print(f"{'fault rate':>10} {'tests':>6} {'yield':>7} {'requests':>9} {'cost x':>7} {'repaired':>9} {'resampled':>9}"
          "  status")
    for rate, r in results.items():
        print(f"{rate:>10.1f} {r['tests']:>6} {r['tests'] / base['tests']:>7.3f} {r['requests']:>9} "
              f"{r['requests'] / base['requests']:>7.2f} {r['repaired']:>9} {r['resampled']:>9}  {r['status']}")
    return results


def overhead_part(var_dir: Path, n: int, latency: float, caps: list[int], processes: int = 1,
                  profile: bool = False) -> dict:
    from django.conf import settings

    from generation import services
    from generation.models import LLMCall, StageProgress
    from tests.fake_openai import FakeOpenAI, Reply
    from tests.generation.scripts import conversation_for, import_document

    from bench.review_http_run import reference_loop_ms

    results = {}
    speed = [reference_loop_ms()]
    for cap in caps:
        threads = (THREADS(cap) + processes - 1) // processes
        with FakeOpenAI(lambda body, i: Reply(content=conversation_for(body)), latency=latency,
                        max_concurrency=cap) as fake:
            settings.OPENAI_BASE_URL = fake.base_url
            # LLM_MAX_CONCURRENCY bounds the requests in flight across every process (a shared limiter).
            env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "bench-key", "LLM_MAX_CONCURRENCY": str(cap)}
            workers = start_workers(processes, lambda i: Worker(
                var_dir, env, threads, profile=str(var_dir / f"prof-c{cap}-w{i}") if profile else None))
            worker = workers[0]
            try:
                cpu0 = sum(w.cpu() for w in workers)
                here0 = time.process_time()
                started = time.monotonic()
                # The library flowgraph has two distinct paths: N/2 imported copies give N distinct prompts.
                job = services.job_create(config={"paths": 2, "conversations": "llm", "sampler": "random",
                                                  "seed": 1, "cache": False},
                                          import_data=import_document(n // 2), name=f"overhead C={cap}")
                job = worker.wait(job, 60 + 20 * n * latency)
                job_wall = time.monotonic() - started
                cpu = sum(w.cpu() for w in workers) - cpu0
                here = time.process_time() - here0
            finally:
                for w in workers:
                    w.stop()
            stage = StageProgress.objects.get(job=job, stage="conversations")
            walls = [(p.stage, (p.finished_at - p.started_at).total_seconds(), p.total)
                     for p in StageProgress.objects.filter(job=job, started_at__isnull=False, finished_at__isnull=False)
                     .order_by("started_at") if p.total]
            calls = LLMCall.objects.filter(job=job, outcome="ok").count()
            if calls != stage.total or fake.request_count != stage.total:
                print(f"!! C={cap}: {stage.total} items but {calls} ok LLMCall rows and {fake.request_count} requests")
            stage_wall = (stage.finished_at - stage.started_at).total_seconds()
            ideal = calls * latency / cap
            results[cap] = {"calls": calls, "stage": stage_wall / ideal, "job": job_wall / ideal, "ideal": ideal,
                            "peak": fake.peak_in_flight, "status": job.status,
                            "cpu_ms": 1000 * cpu / max(1, stage.total), "bench_ms": 1000 * here / max(1, stage.total),
                            "walls": walls, "job_wall": job_wall}
    print(f"overhead at a fast endpoint (latency {latency:.2f} s; N={n} asked; "
          f"broker {settings.CELERY_BROKER_URL.split(':', 1)[0]}; "
          f"database {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]})")
    speed.append(reference_loop_ms())
    print(f"worker processes: {processes} (threads split between them; LLM_MAX_CONCURRENCY shared by them)")
    print(f"machine speed: reference loop {speed[0]:.1f} ms before, {speed[1]:.1f} ms after "
          "(bench/review_http_run.py's; lower is faster: a slower machine raises every ratio)")
    print(f"{'C':>4} {'calls':>6} {'ideal s':>8} {'LLM stage ÷ ideal':>18} {'whole job ÷ ideal':>18} {'peak':>5} "
          f"{'worker CPU ms/item':>19} {'bench+fake CPU ms/item':>23}")
    for cap, r in results.items():
        print(f"{cap:>4} {r['calls']:>6} {r['ideal']:>8.2f} {r['stage']:>18.2f} {r['job']:>18.2f} {r['peak']:>5} "
              f"{r['cpu_ms']:>19.1f} {r['bench_ms']:>23.1f}")
    for cap, r in results.items():
        parts = ", ".join(f"{name} {wall:.2f} s ({n} items)" for name, wall, n in r["walls"])
        print(f"C={cap} whole job {r['job_wall']:.2f} s; stages: {parts}")
    if profile:
        import pstats

        files = sorted(str(p) for p in var_dir.glob("prof-*.prof"))
        if files:
            stats = pstats.Stats(*files, stream=open(os.devnull, "w"))
            stats.stream = sys.stdout
            stats.sort_stats("tottime").print_stats(30)
            stats.sort_stats("cumulative").print_stats(40)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["yield", "overhead", "rate", "structured", "economy", "all"], default="all")
    parser.add_argument("--rates", type=float, nargs="+", default=[0.0, 0.1, 0.3])
    parser.add_argument("--fault-seed", type=int, default=12, help="seed of the yield part's random faults")
    parser.add_argument("--calls", type=int, default=128, help="N, LLM calls in the overhead job")
    parser.add_argument("--latency", type=float, default=0.25, help="L, seconds per request")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 16], help="C values to measure")
    parser.add_argument("--processes", type=int, default=1, help="worker processes sharing threads and C")
    parser.add_argument("--profile", action="store_true", help="cProfile the workers and print the merged top")
    parser.add_argument("--per-minute", type=float, default=600, help="R, the rate part's requests a minute")
    parser.add_argument("--rate-calls", type=int, default=600, help="LLM calls in each rate-part job")
    parser.add_argument("--paper-paths", type=int, default=100, help="n, the economy part's walks per graph (paper)")
    args = parser.parse_args()
    var_dir = setup()
    ok = True
    if args.part in ("yield", "all"):
        r = yield_part(var_dir, args.rates, args.fault_seed)
        worst = r[max(args.rates)]
        base = r[args.rates[0]]
        ok &= worst["tests"] / base["tests"] >= 0.98 and worst["requests"] / base["requests"] <= 1.5
    if args.part in ("overhead", "all"):
        r = overhead_part(var_dir, args.calls, args.latency, args.concurrency, args.processes, args.profile)
        ok &= all(v["stage"] <= (1.15 if c <= 8 else 1.25) for c, v in r.items())
    if args.part in ("rate", "all"):
        from bench.generation_rate import rate_part

        r = rate_part(var_dir, args.per_minute, [1, 3], args.rate_calls, latency=0.3)
        ok &= all(v["throughput"] >= 0.9 and v["share_429"] <= 0.02 for v in r.values())
    if args.part in ("structured", "all"):
        from bench.generation_structured import structured_part

        r = structured_part(var_dir)
        ok &= r[True]["json"] < r[False]["json"]
    if args.part in ("economy", "all"):
        from bench.generation_economy import economy_part

        r = economy_part(var_dir, args.rates, args.paper_paths)
        ok &= r.get((0.1, "ratio"), 0) >= 3
    print("(shared machine: timings are noisy; ratios were measured side by side in this one run)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

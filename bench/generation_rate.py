"""Generation benchmark, rate part: an endpoint allowing R requests a minute (issue #32).

A job whose only LLM stage makes N calls (N/2 imported flowgraphs, two paths each, A.6
conversations, cache off) runs through 1 and then 3 real worker processes against the fake
OpenAI server simulating a rate limit (tests/fake_ratelimit.py: R a minute, starting with none
left, 429 with OpenAI's headers beyond). LLM_MAX_CONCURRENCY is well above what the rate needs, so
only the shared limiter (generation/llm/limiter.py) keeps the job within the limit. Printed for
each: sustained throughput ÷ R (admitted requests ÷ the time from the first request to the last
admitted one) and the share of requests answered 429 (targets: >= 0.9 R, <= 2 %).
"""
from __future__ import annotations

from pathlib import Path

from bench.generation_common import Worker, start_workers


def rate_part(var_dir: Path, per_minute: float, processes: list[int], n: int, latency: float,
              cap: int = 16, threads: int = 12) -> dict:
    from django.conf import settings

    from generation import services
    from generation.models import LLMCall
    from tests.fake_openai import FakeOpenAI, Reply
    from tests.fake_ratelimit import RateLimit
    from tests.generation.scripts import conversation_for, import_document

    results = {}
    for count in processes:
        limit = RateLimit(per_minute, start=0)
        with FakeOpenAI(lambda body, i: Reply(content=conversation_for(body)), latency=latency,
                        rate_limit=limit) as fake:
            settings.OPENAI_BASE_URL = fake.base_url
            env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "bench-key", "LLM_MAX_CONCURRENCY": str(cap),
                   "LLM_MAX_RETRIES": "8"}
            workers = start_workers(count, lambda _: Worker(var_dir, env, threads))
            try:
                job = services.job_create(config={"paths": 2, "conversations": "llm", "sampler": "random",
                                                  "seed": 7 + count, "cache": False},
                                          import_data=import_document(n // 2), name=f"rate limit, {count} workers")
                job = workers[0].wait(job, 120 + 3 * n * 60 / per_minute)
            finally:
                for w in workers:
                    w.stop()
        admitted = [t for t, ok in limit.log if ok]
        refused = len(limit.log) - len(admitted)
        span = admitted[-1] - limit.log[0][0]
        results[count] = {"status": job.status, "admitted": len(admitted), "refused": refused,
                          "throughput": len(admitted) / span * 60 / per_minute,
                          "share_429": refused / len(limit.log),
                          "rows_429": LLMCall.objects.filter(job=job, status_code=429).count(),
                          "seconds": span}
    print(f"against an endpoint allowing R = {per_minute:g} requests a minute (latency {latency} s, "
          f"LLM_MAX_CONCURRENCY {cap}, {n} calls asked; broker {settings.CELERY_BROKER_URL.split(':', 1)[0]})")
    print(f"{'workers':>7} {'admitted':>9} {'429s':>5} {'429 share':>10} {'throughput ÷ R':>15} {'seconds':>8}  status")
    for count, r in results.items():
        print(f"{count:>7} {r['admitted']:>9} {r['refused']:>5} {r['share_429']:>10.2%} {r['throughput']:>15.3f} "
              f"{r['seconds']:>8.1f}  {r['status']} (429 rows on the job: {r['rows_429']})")
    return results

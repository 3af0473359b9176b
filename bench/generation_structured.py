"""Structured outputs against an endpoint that honours them (issue #32 item 3).

The same job (bench/generation.py's yield job: 10 intents, 2 procedures each, 2 paths, A.6
conversations, cache off) runs twice through a real worker against the fake server in its
"honour" mode — a reply asked for with a JSON Schema always conforms to it, as constrained
decoding guarantees — while `rate` of all replies are content faults (wrong-shape JSON, JSON cut
off mid-way). Once with LLM_STRUCTURED_OUTPUTS on (JSON stages send their schema), once off
(json_object and the prompt only). Printed: repair turns per 100 LLM items of the JSON stages
(intents, APIs, conversations) and of all LLM stages, and the tests made.
"""
from __future__ import annotations

import random
import threading
from pathlib import Path

from bench.generation_common import Worker

JOB = {"intents": 10, "procedures_per_intent": 2, "paths": 2, "conversations": "llm", "seed": 3, "cache": False}
JSON_STAGES = ("intents", "apis", "conversations")
LLM_STAGES = ("intents", "procedures", "apis", "flowgraph", "conversations")


def content_faults(inner, rate: float, seed: int):
    from tests.fake_openai import Reply

    rng, lock = random.Random(seed), threading.Lock()
    pool = [Reply.wrong_shape(), Reply.truncated_json()]

    def handler(body: dict, n: int):
        with lock:
            fault, choice = rng.random() < rate, rng.choice(pool)
        return choice if fault else inner(body, n)

    return handler


def structured_part(var_dir: Path, rate: float = 0.3) -> dict:
    from django.conf import settings

    from generation import services
    from generation.models import LLMCall, StageProgress, Test
    from tests.fake_openai import FakeOpenAI
    from tests.generation.scripts import StageScript

    results = {}
    with FakeOpenAI(StageScript(), structured_outputs="honour") as fake:
        settings.OPENAI_BASE_URL = fake.base_url
        for on in (False, True):
            fake.set_handler(content_faults(StageScript(), rate, seed=5))
            env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "bench-key", "LLM_MAX_CONCURRENCY": "8",
                   "LLM_STRUCTURED_OUTPUTS": "true" if on else "false"}
            worker = Worker(var_dir, env, threads=10)
            try:
                job = worker.wait(services.job_create(config=JOB, name=f"structured outputs {on}"), 600)
            finally:
                worker.stop()
            items = dict(StageProgress.objects.filter(job=job).values_list("stage", "total"))
            repairs = LLMCall.objects.filter(job=job, repair__gte=1).exclude(outcome__in=["retried", "error"])
            forms = set(LLMCall.objects.filter(job=job, stage__in=JSON_STAGES).values_list("output_form", flat=True))
            results[on] = {
                "json": 100 * repairs.filter(stage__in=JSON_STAGES).count() / sum(items[s] for s in JSON_STAGES),
                "all": 100 * repairs.count() / sum(items[s] for s in LLM_STAGES),
                "tests": Test.objects.filter(job=job).count(), "forms": sorted(forms), "status": job.status}
    print(f"structured outputs on an endpoint that honours them ({rate:.0%} of replies wrong-shape or cut-off JSON)")
    print(f"{'schema sent':>11} {'repairs/100 JSON items':>23} {'repairs/100 LLM items':>22} {'tests':>6}  forms")
    for on, r in results.items():
        print(f"{'yes' if on else 'no':>11} {r['json']:>23.1f} {r['all']:>22.1f} {r['tests']:>6}  {','.join(r['forms'])}")
    return results

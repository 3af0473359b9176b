"""Faults through a real Celery worker: a SIGKILL mid-call, and a rerun after a faulty run (issue #12)."""
from __future__ import annotations

from collections import Counter

import pytest
from django.db.models import Sum

from generation import services
from generation.models import LLMCall, StageProgress
from tests.conftest import wait_for
from tests.fake_openai import FakeOpenAI, Reply, point_settings_at, with_faults
from tests.generation.scripts import BAD, JOB_CONFIG, StageScript
from tests.generation.test_jobs import assert_expected_funnel, funnel
from tests.generation.test_worker_jobs import no_duplicates, wait_job

pytestmark = [pytest.mark.worker, pytest.mark.slow]


def test_sigkilled_worker_calls_in_flight_are_counted(settings, celery_worker_factory):
    """Every request that reached the endpoint has a row; the killed worker's are lost_in_flight and costed."""
    with FakeOpenAI(StageScript(bad=BAD), latency=1.0) as fake:
        env = point_settings_at(settings, fake, LLM_PRICES="gpt-4o=1000/1000")
        first = celery_worker_factory(extra_env=env, concurrency=4)
        job = services.job_create(config=JOB_CONFIG)
        # Kill while procedure calls are in the air (the endpoint takes a second to answer).
        wait_for(lambda: LLMCall.objects.filter(job=job, stage="procedures", outcome="in_flight").count() >= 2,
                 timeout=90, message=f"procedure calls in flight\n{first.log()[-3000:]}")
        first.kill()
        in_air = LLMCall.objects.filter(job=job, outcome="in_flight").count()
        assert in_air >= 2
        second = celery_worker_factory(extra_env=env, concurrency=4)
        job = wait_job(job.pk, second, 180)
        requests = fake.request_count
    assert_expected_funnel(job)
    no_duplicates(job)
    outcomes = Counter(LLMCall.objects.filter(job=job).values_list("outcome", flat=True))
    assert outcomes["in_flight"] == 0
    assert outcomes["lost_in_flight"] == in_air
    sent = sum(n for outcome, n in outcomes.items() if outcome != "cached")
    # Each request has its row (a row may lack a request if the kill fell between writing and sending).
    assert requests <= sent <= requests + outcomes["lost_in_flight"]
    lost = LLMCall.objects.filter(job=job, outcome="lost_in_flight")
    assert all(c.tokens_estimated and c.prompt_tokens > 0 and c.cost_usd > 0 for c in lost)
    totals = LLMCall.objects.filter(job=job).aggregate(p=Sum("prompt_tokens"), c=Sum("cost_usd"))
    assert job.prompt_tokens == totals["p"] and job.cost_usd == totals["c"]
    # The lost items were asked again (fresh calls), so the job still made every procedure.
    assert StageProgress.objects.get(job=job, stage="procedures").done == 6


def test_rerun_after_faulty_run_calls_again_for_what_failed(settings, celery_worker_factory):
    """30 % faults incl. broken content, no repair and no resample: losses; the rerun on a healthy endpoint makes fresh
    calls only for what failed (nothing broken was cached) and gets the fault-free funnel."""
    faults = [Reply.rate_limited(0.02), Reply.server_error(503), Reply.truncated(), Reply.wrong_shape(),
              Reply.truncated_json()]
    script = StageScript(bad=BAD)
    handler = with_faults(script, rate=0.3, seed=5, faults=faults, max_consecutive=2, per_prompt=True)
    with FakeOpenAI(handler) as fake:
        env = point_settings_at(settings, fake, LLM_MAX_RETRIES=3, LLM_REPAIR_ATTEMPTS=0, LLM_RESAMPLES=0,
                                 LLM_CACHE=True)
        worker = celery_worker_factory(extra_env=env)
        faulty = wait_job(services.job_create(config=JOB_CONFIG).pk, worker, 150)
        invalid = LLMCall.objects.filter(job=faulty, outcome="invalid").count()
        fake.set_handler(script)
        fake.reset()
        rerun = wait_job(services.job_create(config=JOB_CONFIG).pk, worker, 150)
        fresh = fake.request_count
    assert invalid >= 1
    assert_expected_funnel(rerun)
    outcomes = Counter(LLMCall.objects.filter(job=rerun).values_list("outcome", flat=True))
    assert fresh == outcomes["ok"] + outcomes["invalid"] and outcomes["ok"] >= 1
    assert outcomes["cached"] >= 1
    # Nothing cached was ever served that had failed.
    served = LLMCall.objects.filter(job=rerun, outcome="cached").values_list("prompt_hash", flat=True)
    assert not LLMCall.objects.filter(prompt_hash__in=list(served), outcome="invalid", validated=True).exists()
    assert funnel(faulty) != funnel(rerun) or invalid == 0


def test_faults_with_repair_lose_nothing(settings, celery_worker_factory):
    """Transport faults and broken content at 30 %, with retries and repairs: the fault-free funnel."""
    faults = [Reply.rate_limited(0.02), Reply.server_error(500), Reply.truncated(), Reply.wrong_shape(),
              Reply.truncated_json()]
    faulty = with_faults(StageScript(bad=BAD), rate=0.3, seed=11, faults=faults, max_consecutive=2, per_prompt=True)

    def handler(body: dict, n: int) -> Reply:
        # Which request meets which fault depends on the worker threads' order; the very first
        # reply is broken content in every run, so at least one repair always happens.
        return Reply.wrong_shape() if n == 0 else faulty(body, n)

    with FakeOpenAI(handler) as fake:
        env = point_settings_at(settings, fake, LLM_MAX_RETRIES=3, LLM_REPAIR_ATTEMPTS=2, LLM_CACHE=False)
        worker = celery_worker_factory(extra_env=env)
        job = wait_job(services.job_create(config=JOB_CONFIG).pk, worker, 150)
    assert_expected_funnel(job, reasons=False)
    assert sum(StageProgress.objects.filter(job=job).values_list("repaired", flat=True)) >= 1

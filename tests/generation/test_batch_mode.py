"""Batch mode (#32 item 4) end to end: a real Celery worker, the fake server's /files and /batches
(a batch that partly fails, one that expires), the same parsing, validation and repair as online,
and the cost at the batch price: half of the online job's for the same tests."""
from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pytest

from generation import services
from generation.models import BatchRequest, LLMBatch, LLMCall, Test
from generation.services.config import JobConfigError
from tests.fake_batches import combine, expiring, partly_failing
from tests.fake_openai import FakeOpenAI, point_settings_at
from tests.generation.scripts import BAD, JOB_CONFIG, StageScript
from tests.generation.test_jobs import assert_expected_funnel
from tests.generation.test_worker_jobs import wait_job

pytestmark = [pytest.mark.worker, pytest.mark.slow]


def _tests(job) -> set:
    return {(t.position, t.expected_type, t.expected_text, t.expected_api_name, str(t.context))
            for t in Test.objects.filter(job=job)}


def test_batch_job_matches_online_at_half_the_cost(settings, celery_worker_factory):
    # Batch 0 (intents) fails every third line with a 500; batch 2 (procedures, after the retry of
    # the failed line in batch 1) expires after its first two lines.
    script = combine(partly_failing(batch_no=0, every=3), expiring(batch_no=2, after=2))
    with FakeOpenAI(StageScript(bad=BAD), batch_script=script) as fake:
        env = point_settings_at(settings, fake, LLM_BATCH_POLL_SECONDS=0.3, LLM_PRICES="gpt-4o=4/10")
        worker = celery_worker_factory(extra_env=env)
        online = wait_job(services.job_create(config={**JOB_CONFIG, "cache": False}).pk, worker, 120)
        online_requests = fake.request_count
        batched = wait_job(services.job_create(config={**JOB_CONFIG, "cache": False, "batch": True}).pk, worker, 240)
        assert fake.request_count == online_requests  # nothing of the batch job went online
        answered = len(fake.batch_store.lines)
    assert_expected_funnel(online)
    assert_expected_funnel(batched)  # the same funnel: same parsing, validation, repair
    assert _tests(batched) == _tests(online) and _tests(online)

    # Every request of the batch job went through a batch; failed and expired lines were sent again.
    batches = list(LLMBatch.objects.filter(job=batched).order_by("id"))
    assert len(batches) >= 5 and all(b.status == "done" and b.remote_id for b in batches)
    assert batches[0].failed >= 1 and batches[0].remote_status == "completed"
    assert any(b.remote_status == "expired" and b.expired >= 1 and b.succeeded >= 1 for b in batches)
    calls = LLMCall.objects.filter(job=batched)
    assert not calls.filter(batch__isnull=True).exists()
    outcomes = Counter(calls.values_list("outcome", flat=True))
    assert outcomes["retried"] == sum(b.failed + b.expired for b in batches)
    assert outcomes["error"] == 0 and outcomes["in_flight"] == 0
    assert outcomes["ok"] + outcomes["invalid"] == answered  # one row per answered line
    assert not BatchRequest.objects.filter(job=batched).exclude(state="done").exists()
    # Repairs travelled as later batches: the repaired items' second turns have repair=1.
    assert calls.filter(repair__gte=1).exists()

    # Cost: the same replies at half the price. (Prices chosen so that half a call's cost, 10 × 4 +
    # 5 × 10 tokens·$/M = $0.00009 → $0.000045, is exact in the six decimals a cost is stored with.)
    online_ok = LLMCall.objects.filter(job=online, outcome__in=["ok", "invalid"]).count()
    assert outcomes["ok"] + outcomes["invalid"] == online_ok
    ratio = batched.cost_usd / online.cost_usd
    per_test = (batched.cost_usd / len(_tests(batched)), online.cost_usd / len(_tests(online)))
    print(f"\nbatch mode: cost per test ${per_test[0]:.6f} vs online ${per_test[1]:.6f}: ratio {ratio:.3f}")
    assert ratio == Decimal("0.5")


def test_batch_mode_refused_where_the_endpoint_has_none(settings, db):
    from generation.llm import capabilities

    with FakeOpenAI(StageScript(), batches=False) as fake:
        point_settings_at(settings, fake)
        assert capabilities.probe()["batches"] is False
        with pytest.raises(JobConfigError, match="no Batch API"):
            services.job_create(config={**JOB_CONFIG, "batch": True}, enqueue=False)
    with pytest.raises(JobConfigError, match="batch must be true or false"):
        services.job_create(config={**JOB_CONFIG, "batch": "yes"}, enqueue=False)

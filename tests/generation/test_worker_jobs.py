"""Whole jobs through a real Celery worker process and the real local fake OpenAI server."""
from __future__ import annotations

from collections import Counter

import pytest

from generation import services
from generation.models import Conversation, GenerationJob, LLMCall, StageProgress, Test
from tests.conftest import wait_for
from tests.fake_openai import FakeOpenAI, Reply, point_settings_at, with_faults
from tests.generation.scripts import BAD, JOB_CONFIG, StageScript
from tests.generation.test_jobs import assert_expected_funnel

pytestmark = [pytest.mark.worker, pytest.mark.slow]


def finished(job_id: int) -> GenerationJob | None:
    job = GenerationJob.objects.get(pk=job_id)
    return job if job.is_terminal else None


def wait_job(job_id: int, worker, timeout: float) -> GenerationJob:
    try:
        return wait_for(lambda: finished(job_id), timeout=timeout, message=f"job {job_id} to finish")
    except AssertionError as exc:
        progress = {p.stage: (p.state, p.done, p.total) for p in StageProgress.objects.filter(job_id=job_id)}
        raise AssertionError(f"{exc}\nprogress: {progress}\nworker log:\n{worker.log()[-4000:]}") from None


def no_duplicates(job: GenerationJob) -> None:
    keys = list(Conversation.objects.filter(job=job).values_list("path_id", flat=True))
    assert len(keys) == len(set(keys))
    positions = list(Test.objects.filter(job=job).values_list("conversation_id", "position"))
    assert len(positions) == len(set(positions))
    for sp in StageProgress.objects.filter(job=job).exclude(state="skipped"):
        assert sp.done == len(sp.items) == sp.total or sp.imported, sp.stage


def test_whole_job_through_a_worker(settings, celery_worker_factory):
    with FakeOpenAI(StageScript(bad=BAD)) as fake:
        env = point_settings_at(settings, fake)
        worker = celery_worker_factory(extra_env=env)
        job = services.job_create(config=JOB_CONFIG)
        job = wait_job(job.pk, worker, 90)
    assert_expected_funnel(job)
    no_duplicates(job)


def test_thirty_percent_faults_lose_nothing(settings, celery_worker_factory):
    script = StageScript(bad=BAD)
    faults = [Reply.rate_limited(0.05), Reply.server_error(500), Reply.server_error(503), Reply.truncated(),
              Reply.slow(1.5)]
    with FakeOpenAI(with_faults(script, rate=0.3, seed=3, faults=faults, max_consecutive=2)) as fake:
        env = point_settings_at(settings, fake, LLM_MAX_RETRIES=3, OPENAI_TIMEOUT=0.5, LLM_CACHE=False)
        worker = celery_worker_factory(extra_env=env)
        job = services.job_create(config=JOB_CONFIG)
        job = wait_job(job.pk, worker, 120)
        injected = sum(1 for r in fake.replies if r.is_fault or r.delay)
    assert_expected_funnel(job)  # nothing lost: the same funnel as without faults
    outcomes = Counter(LLMCall.objects.filter(job=job).values_list("outcome", flat=True))
    assert outcomes["error"] == 0
    assert injected >= 5 and outcomes["retried"] == injected  # every failure recorded
    total = outcomes["ok"] + outcomes["retried"] + outcomes["invalid"]
    assert 0.15 <= injected / total <= 0.45


def test_sigkilled_worker_restarted_finishes_without_duplicates(settings, celery_worker_factory):
    with FakeOpenAI(StageScript(bad=BAD), latency=0.3) as fake:
        env = point_settings_at(settings, fake)
        first = celery_worker_factory(extra_env=env, concurrency=2)
        job = services.job_create(config=JOB_CONFIG)
        # Kill while procedures are being written: some done, others reserved or in flight.
        wait_for(lambda: StageProgress.objects.get(job=job, stage="procedures").done >= 2, timeout=60,
                 message=f"procedures to start\n{first.log()[-3000:]}")
        first.kill()
        assert not finished(job.pk)
        second = celery_worker_factory(extra_env=env, concurrency=2)
        job = wait_job(job.pk, second, 120)
    assert_expected_funnel(job)
    no_duplicates(job)


def test_generate_command_waits_and_prints_the_funnel(settings, celery_worker_factory, tmp_path):
    import json
    from io import StringIO

    from django.core.management import CommandError, call_command

    from tests.generation.scripts import import_document

    settings.OPENAI_BASE_URL = ""  # imported flowgraphs + offline stages need no endpoint
    # Ready first: `--wait` gives up within seconds when no worker answers its ping.
    worker = celery_worker_factory(extra_env={"OPENAI_BASE_URL": ""}).wait_ready()
    path = tmp_path / "import.json"
    path.write_text(json.dumps(import_document(2)))
    out = StringIO()
    try:
        call_command("generate", "--from-file", str(path), "--paths", "3", "--noise", "0.2", "--wait",
                     "--timeout", "90", stdout=out)
    except CommandError as exc:
        raise AssertionError(f"{exc}\n{out.getvalue()}\nworker log:\n{worker.log()[-4000:]}") from None
    text = out.getvalue()
    job = GenerationJob.objects.get()
    assert job.status == "succeeded"
    assert "Conversation graphs" in text and "Tests" in text and f"job {job.pk}: succeeded" in text
    fewer = job.progress.get(stage="paths").notes.get("fewer_distinct_paths", 0)  # repeats dropped (#12)
    assert Conversation.objects.filter(job=job).count() + job.discards.filter(stage="conversations").count() \
        + fewer == 6
    assert (fewer == 0) == ("fewer_distinct_paths" not in text)

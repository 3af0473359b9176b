"""Workers that fail do not stall jobs (issue #32 item 6), and a multi-API job through a real worker
(item 8): real Celery worker processes, the suite's fake OpenAI server."""
from __future__ import annotations

import json
from collections import Counter
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from generation import services
from generation.models import GenerationJob, ItemClaim, LLMCall, Procedure, StageProgress
from tests.conftest import wait_for
from tests.fake_openai import FakeOpenAI, point_settings_at
from tests.generation.scripts import BAD, JOB_CONFIG, StageScript, import_document
from tests.generation.test_jobs import assert_expected_funnel
from tests.generation.test_multi_api import CHAIN_APIS
from tests.generation.test_worker_jobs import finished, no_duplicates, wait_job

pytestmark = [pytest.mark.worker, pytest.mark.slow]


def test_a_surviving_worker_takes_a_sigkilled_workers_items(settings, celery_worker_factory):
    """Two workers; one is SIGKILLed mid-stage and no worker starts after it: the other one's
    periodic recovery re-sends what the dead one held, marks its calls lost, and the job finishes."""
    with FakeOpenAI(StageScript(bad=BAD), latency=1.0) as fake:
        env = point_settings_at(settings, fake, JOB_RECOVERY_SECONDS="3")
        doomed = celery_worker_factory(extra_env=env, concurrency=3).wait_ready()
        survivor = celery_worker_factory(extra_env=env, concurrency=3).wait_ready()
        job = services.job_create(config=JOB_CONFIG)
        dead = f":{doomed.proc.pid}"
        # Kill while the doomed worker has procedure calls in the air (the endpoint takes a second).
        wait_for(lambda: LLMCall.objects.filter(job=job, stage="procedures", outcome="in_flight",
                                                worker__endswith=dead).exists(),
                 timeout=90, message=f"the doomed worker's calls\n{doomed.log()[-3000:]}")
        doomed.kill()
        in_air = LLMCall.objects.filter(job=job, outcome="in_flight", worker__endswith=dead).count()
        held = set(ItemClaim.objects.filter(job=job, owner__endswith=dead).values_list("stage", "key"))
        assert in_air >= 1 and not finished(job.pk)
        job = wait_job(job.pk, survivor, 120)
    assert job.status == "succeeded", job.error
    assert_expected_funnel(job)
    no_duplicates(job)
    calls = LLMCall.objects.filter(job=job)
    outcomes = Counter(calls.values_list("outcome", flat=True))
    assert outcomes["in_flight"] == 0 and outcomes["lost_in_flight"] == in_air
    assert all(c.worker.endswith(dead) for c in calls.filter(outcome="lost_in_flight"))
    # Every item the dead worker held unfinished was taken over and finished by the survivor.
    mine = f":{survivor.proc.pid}"
    for stage, key in held:
        assert key in StageProgress.objects.get(job=job, stage=stage).items
    taken = ItemClaim.objects.filter(job=job, stage="procedures", owner__endswith=mine)
    assert taken.count() >= 1
    assert "periodic job recovery failed" not in survivor.log()


def test_generate_wait_says_when_no_worker_answers(settings, transactional_db, tmp_path):
    settings.OPENAI_BASE_URL = ""
    path = tmp_path / "import.json"
    path.write_text(json.dumps(import_document(1)))
    out = StringIO()
    with pytest.raises(CommandError, match="no Celery worker of generation jobs answered within 8 s") as exc:
        call_command("generate", "--from-file", str(path), "--wait", stdout=out)
    assert "start one" in str(exc.value) and "--inline" in str(exc.value)
    assert "queued" in out.getvalue()


def test_webhooks_have_their_own_queue(settings, celery_worker_factory):
    """A worker on the generation queue runs the job and leaves its webhook alone; the webhook
    worker delivers it."""
    from tests.webhooks.receiver import Receiver
    from webhooks import services as hooks
    from webhooks.models import Delivery
    from webhooks.tasks import deliver_webhook

    assert deliver_webhook.app.amqp.router.route({}, deliver_webhook.name)["queue"].name == "webhooks"
    settings.OPENAI_BASE_URL = ""
    generation = celery_worker_factory(extra_env={"OPENAI_BASE_URL": ""}, queues="celery").wait_ready()
    hook, secret = hooks.webhook_create(name="ci", url="http://127.0.0.1:9/", events=["job.finished"])
    with Receiver(secret) as receiver:
        hook.url = receiver.url
        hook.save(update_fields=["url"])
        job = services.job_create(config={"paths": 2}, import_data=import_document(1))
        job = wait_job(job.pk, generation, 90)
        assert job.status == "succeeded"
        # The event is recorded when the job's final transaction has committed, just after the status.
        wait_for(lambda: Delivery.objects.exists(), timeout=30,
                 message=f"the job.finished delivery to be recorded\n{generation.log()[-3000:]}")
        delivery = Delivery.objects.get()
        assert delivery.state == "pending" and delivery.attempts == 0  # queued where this worker does not look
        generation.stop()
        hooks_worker = celery_worker_factory(queues="webhooks")
        wait_for(lambda: Delivery.objects.get().state == "delivered", timeout=60,
                 message=f"the webhook worker to deliver\n{hooks_worker.log()[-3000:]}")
    assert [r["status"] for r in receiver.received] == [200] and receiver.received[0]["valid"]
    # A webhook worker alone runs no generation job: `generate --wait` says there is no worker for it.
    path = settings.VAR_DIR / "import.json"
    path.write_text(json.dumps(import_document(1)))
    with pytest.raises(CommandError, match="no Celery worker of generation jobs answered"):
        call_command("generate", "--from-file", str(path), "--wait", stdout=StringIO())
    assert "Task webhooks.tasks.deliver_webhook[" not in generation.log()
    assert "Task webhooks.tasks.deliver_webhook[" in hooks_worker.log()


def test_a_multi_api_job_through_a_worker(settings, celery_worker_factory, client, admin_user):
    """`generate --api-chains N --chain-length L` through a real worker; each procedure's chain on the page."""
    with FakeOpenAI(StageScript()) as fake:
        env = point_settings_at(settings, fake)
        worker = celery_worker_factory(extra_env=env).wait_ready()
        apis = settings.VAR_DIR / "chain_apis.json"
        apis.write_text(json.dumps(CHAIN_APIS))
        out = StringIO()
        try:
            call_command("generate", "--intents", "2", "--procedures-per-intent", "2", "--conversations", "llm",
                         "--api-chains", "3", "--chain-length", "2", "--chain-apis", str(apis), "--wait",
                         "--timeout", "120", stdout=out)
        except CommandError as exc:
            raise AssertionError(f"{exc}\n{out.getvalue()}\n{worker.log()[-3000:]}") from None
        prompts = [json.dumps(b["messages"]) for b in fake.requests]
    job = GenerationJob.objects.get()
    assert job.status == "succeeded" and job.config["api_chains"]["length"] == 2
    chains = job.config["api_chains"]["chains"]
    procedures = list(Procedure.objects.filter(job=job).order_by("id"))
    assert len(procedures) == 4
    # Work item i got chain i mod len(chains); the A.2 prompt of each named its chain's APIs in order.
    for p in procedures:
        assert p.api_chain in chains
    assert sum("must use these APIs, in this order" in t for t in prompts) == 4
    client.force_login(admin_user)
    page = client.get(f"/generation/jobs/{job.pk}/").content.decode()
    assert "<h2>API chains</h2>" in page
    assert page.count("<code>find_user_id_by_email</code> → <code>get_user_details</code>") == 4
    assert "find_user_id_by_email → get_user_details: user_id → user_id" in page


def test_a_cost_limit_stops_a_job_on_a_worker_cleanly(settings, celery_worker_factory):
    """Through a worker with four threads: failed with the reason, what was made kept, no request
    sent after the job stopped, and no item counted as raised."""
    from generation.models import Discard, Intent

    with FakeOpenAI(StageScript(), latency=0.1) as fake:
        env = point_settings_at(settings, fake, LLM_PRICES="gpt-4o=1000/1000", LLM_CACHE="false")
        worker = celery_worker_factory(extra_env=env, concurrency=4).wait_ready()
        job = services.job_create(config={**JOB_CONFIG, "cost_limit": 0.1})  # the whole job costs ~$0.5
        job = wait_job(job.pk, worker, 120)
        sent = fake.request_count
    assert job.status == "failed" and job.error.startswith("cost limit reached"), job.error
    calls = LLMCall.objects.filter(job=job)
    assert sent == calls.count() and all(c.created_at <= job.finished_at for c in calls)
    assert Intent.objects.filter(job=job).exists()
    assert not Discard.objects.filter(job=job, reason__in=["stage_error", "task_error"]).exists()
    assert not calls.filter(outcome="in_flight").exists()
    cancelled = [k for sp in StageProgress.objects.filter(job=job) for k, v in sp.items.items() if v == "cancelled"]
    assert cancelled  # the items that wanted a request after the limit are not counted

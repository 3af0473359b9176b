"""Secrets never stored or shown, exact cost with in-flight rows, honest job states (issue #12)."""
from __future__ import annotations

import logging
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from generation import llm, services, tasks
from generation.llm import accounting
from generation.models import Discard, GenerationJob, LLMCall, StageProgress
from generation.redact import MASK, redact
from tests.fake_openai import Reply, echo_authorization, point_settings_at
from tests.generation.scripts import JOB_CONFIG, StageScript

pytestmark = pytest.mark.django_db

KEY = "sk-live-Zq9vTq3mN4abcdefGHIJ"


@pytest.mark.parametrize("text, secret", [
    ("Invalid key sk-proj-abcDEF123456xyz given", "sk-proj-abcDEF123456xyz"),
    ("header Authorization: Bearer eyJhbGciOi.payload.sig rejected", "eyJhbGciOi.payload.sig"),
    ('{"api-key": "0123456789abcdef"}', "0123456789abcdef"),
    ("api_key=hunter2hunter2&x=1", "hunter2hunter2"),
    ("x-api-key: QWERTY123456", "QWERTY123456"),
    ("connection error: https://bob:s3cretpass@llm.example/v1", "s3cretpass"),
])
def test_redact_credential_shapes(text, secret):
    out = redact(text)
    assert secret not in out and MASK in out


def test_redact_configured_key_whatever_its_shape(settings):
    settings.OPENAI_API_KEY = "plainsecretvalue42"
    assert redact("the gateway said plainsecretvalue42!") == f"the gateway said {MASK}!"
    assert redact("Set OPENAI_API_KEY if the server needs one") == "Set OPENAI_API_KEY if the server needs one"


def test_echoed_authorization_never_stored_or_shown(settings, fake_openai, client, admin_user, caplog):
    point_settings_at(settings, fake_openai, api_key=KEY)
    fake_openai.set_handler(echo_authorization(fake_openai))
    caplog.set_level(logging.INFO)
    job = services.job_run_inline(job=services.job_create(config=JOB_CONFIG, enqueue=False))
    sent = {k.lower(): v for k, v in fake_openai.headers[0].items()}
    assert sent["authorization"] == f"Bearer {KEY}"  # the key really went out, and came back in the error
    assert job.status == "failed"
    call = LLMCall.objects.get(job=job)
    assert "401" in call.error and MASK in call.error
    stored = [job.error, call.error, call.response, str(call.request)] + [
        f"{d.detail} {d.example}" for d in Discard.objects.filter(job=job)]
    with pytest.raises(llm.LLMFailed) as failed:
        llm.chat(stage="apis", messages=[{"role": "user", "content": "hi"}])
    stored.append(str(failed.value))
    client.force_login(admin_user)
    pages = [client.get(reverse("generation:job", args=[job.pk])),
             client.get(reverse("generation:llm_call", args=[job.pk, call.pk])),
             client.get(reverse("admin:generation_llmcall_change", args=[call.pk])),
             client.get(f"/api/jobs/{job.pk}/")]
    assert all(p.status_code == 200 for p in pages)
    stored += [p.content.decode() for p in pages]
    stored += [r.getMessage() for r in caplog.records]
    for text in stored:
        assert KEY not in text and "Zq9vTq3mN4" not in text


def test_log_lines_pass_the_redactor(settings):
    from generation.redact import RedactingFilter

    settings.OPENAI_API_KEY = KEY
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "calling with %s", (f"Bearer {KEY}",), None)
    RedactingFilter().filter(record)
    assert KEY not in record.getMessage()


def test_each_request_has_its_row_before_it_is_sent(settings, fake_openai, monkeypatch):
    point_settings_at(settings, fake_openai)
    served: list[int] = []
    fake_openai.set_handler(lambda body, n: served.append(n) or Reply(content="ok"))
    rows_at_start: list[tuple[int, str]] = []
    real_start = accounting.call_start

    def spy(job, **fields):
        call_id = real_start(job, **fields)
        rows_at_start.append((len(served), LLMCall.objects.get(pk=call_id).outcome))
        return call_id

    monkeypatch.setattr(accounting, "call_start", spy)
    llm.chat(stage="apis", messages=[{"role": "user", "content": "x" * 400}])
    assert rows_at_start == [(0, "in_flight")]  # written before any request reached the endpoint
    call = LLMCall.objects.get()
    assert call.outcome == "ok" and call.prompt_tokens == 10 and not call.tokens_estimated


def test_orphaned_in_flight_rows_are_marked_lost_and_charged(settings):
    settings.LLM_PRICES = "m=1000/1000"
    job = GenerationJob.objects.create(config={})
    StageProgress.objects.create(job=job, stage="apis")
    messages = [{"role": "user", "content": "y" * 4000}]
    estimate = accounting.estimate_prompt_tokens(messages)
    dead = accounting.HOST + ":999999"
    alive = accounting.worker_id()
    LLMCall.objects.create(job=job, stage="apis", model="m", prompt_hash="h", outcome="in_flight",
                           prompt_tokens=estimate, tokens_estimated=True, worker=dead)
    LLMCall.objects.create(job=job, stage="apis", model="m", prompt_hash="h", outcome="in_flight",
                           prompt_tokens=estimate, tokens_estimated=True, worker=alive)
    assert llm.calls_mark_lost() == 1
    lost = LLMCall.objects.get(outcome="lost_in_flight")
    assert lost.worker == dead and lost.tokens_estimated and lost.cost_usd == Decimal(estimate) / 1000
    job.refresh_from_db()
    assert job.prompt_tokens == estimate and job.cost_usd == Decimal(estimate) / 1000
    assert llm.calls_mark_lost() == 0  # idempotent; the live worker's row stays in flight
    apis = next(r for r in services.job_funnel(job) if r["stage"] == "apis")
    assert (apis["lost"], apis["in_flight"], apis["estimated"]) == (1, 1, 2)
    # Rows from another host are lost only once far older than any request can take.
    far = LLMCall.objects.create(job=job, stage="apis", model="m", prompt_hash="h", outcome="in_flight",
                                 prompt_tokens=5, worker="elsewhere:1")
    assert llm.calls_mark_lost() == 0
    LLMCall.objects.filter(pk=far.pk).update(created_at=timezone.now() - timedelta(hours=3))
    assert llm.calls_mark_lost() == 1


def test_first_stage_failing_entirely_fails_the_job(settings, fake_openai):
    point_settings_at(settings, fake_openai)
    fake_openai.set_handler(lambda body, n: Reply(content="I cannot help with that."))
    job = services.job_run_inline(job=services.job_create(config=JOB_CONFIG, enqueue=False))
    assert job.status == "failed"
    assert job.error.startswith("stage intents: no item survived") and "invalid_json" in job.error
    assert StageProgress.objects.get(job=job, stage="procedures").state == "waiting"


def test_an_item_that_raises_fails_the_job_with_the_error(settings, fake_openai, monkeypatch):
    point_settings_at(settings, fake_openai)
    fake_openai.set_handler(StageScript())
    from generation import stages

    real = stages.RUNNERS["apis"]

    def boom(ctx, key, index, parent):
        if index == 0:
            raise ZeroDivisionError("bad arithmetic in a stage")
        return real(ctx, key, index, parent)

    monkeypatch.setitem(stages.RUNNERS, "apis", boom)
    job = services.job_run_inline(job=services.job_create(config=JOB_CONFIG, enqueue=False))
    assert job.status == "failed"
    assert job.error.startswith("1 item(s) raised an error in stage apis (1)") and "ZeroDivisionError" in job.error
    assert StageProgress.objects.get(job=job, stage="tests").state == "done"  # the rest of the job ran


def test_task_that_raises_marks_its_item_failed(settings, fake_openai, monkeypatch):
    point_settings_at(settings, fake_openai)
    fake_openai.set_handler(StageScript())
    job = services.job_create(config={**JOB_CONFIG, "intents": 2}, enqueue=False)
    services.job_advance(job_id=job.pk, publish=lambda stage, key: None)

    def explode(**kw):
        raise OverflowError("Python int too large to convert to C long")

    monkeypatch.setattr(services, "item_run", explode)
    monkeypatch.setattr(tasks.job_advance_task, "delay", lambda job_id: None)
    tasks.item_run_task.run(job.pk, "intents", "intents:0:batch")
    sp = StageProgress.objects.get(job=job, stage="intents")
    assert sp.items == {"intents:0:batch": "failed"} and sp.state == "done" and sp.failed == 1
    assert "OverflowError" in Discard.objects.get(job=job).detail
    services.job_advance(job_id=job.pk, publish=lambda stage, key: None)
    job.refresh_from_db()
    assert job.status == "failed" and "intents" in job.error


def test_advance_that_raises_fails_the_job(settings, fake_openai, monkeypatch):
    point_settings_at(settings, fake_openai)
    job = services.job_create(config=JOB_CONFIG, enqueue=False)

    def explode(**kw):
        raise RuntimeError("planning broke")

    monkeypatch.setattr(services, "job_advance", explode)
    tasks.job_advance_task.run(job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and "planning broke" in job.error


def test_watchdog_fails_a_stalled_job_with_the_reason(settings, fake_openai, client, admin_user):
    point_settings_at(settings, fake_openai, JOB_STALL_MINUTES=10)
    job = services.job_create(config=JOB_CONFIG, enqueue=False)
    services.job_advance(job_id=job.pk, publish=lambda stage, key: None)  # published, never run
    job.refresh_from_db()
    assert job.status == "running"
    assert services.job_watchdog(job) is False  # just started
    later = timezone.now() + timedelta(minutes=11)
    assert services.job_watchdog(job, now=later) is True
    job.refresh_from_db()
    assert job.status == "failed" and "no progress for 11 minutes" in job.error
    assert "stage intents running at 0/1" in job.error
    # The page shows the failure (and the watchdog also runs when the page is opened).
    other = services.job_create(config=JOB_CONFIG, enqueue=False)
    services.job_advance(job_id=other.pk, publish=lambda stage, key: None)
    GenerationJob.objects.filter(pk=other.pk).update(
        started_at=timezone.now() - timedelta(hours=1), progress_at=timezone.now() - timedelta(hours=1),
        created_at=timezone.now() - timedelta(hours=1))
    StageProgress.objects.filter(job=other).update(started_at=timezone.now() - timedelta(hours=1))
    client.force_login(admin_user)
    page = client.get(reverse("generation:job", args=[other.pk])).content.decode()
    assert "no progress for 60 minutes" in page

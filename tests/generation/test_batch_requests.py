"""Batch mode in this process (the poll called directly): the cache both ways, a line failing for
good, a job that stopped while its requests waited. The worker path is in test_batch_mode.py."""
from __future__ import annotations

import json

import pytest

from generation import llm
from generation.llm import batches
from generation.models import BatchRequest, GenerationJob, LLMBatch, LLMCall
from tests.fake_openai import FakeOpenAI, Reply, point_settings_at

pytestmark = pytest.mark.django_db
GOOD = json.dumps({"messages": [{"role": "user", "content": "hi"}]})
MSG = [{"role": "user", "content": "write it"}]


def _ask(job, **kw):
    return llm.ask(stage="conversations", messages=MSG, model="m", job=job, key="k", batch=True,
                   check=lambda reply: [] if reply == GOOD else [("CV-SHAPE", "not a conversation")], **kw)


def _poll_until_quiet() -> list:
    rerun, more = [], True
    for _ in range(6):
        got, more = batches.batches_poll()
        rerun += got
        if not more:
            break
    return rerun


def test_validated_batch_reply_serves_the_cache_and_the_cache_serves_batches(settings):
    with FakeOpenAI(lambda body, n: Reply(content=GOOD)) as fake:
        point_settings_at(settings, fake)
        first = GenerationJob.objects.create(name="a", status="running")
        with pytest.raises(llm.LLMDeferred):
            _ask(first)
        assert _poll_until_quiet() == [(first.pk, "conversations", "k")]
        answer = _ask(first)
        assert answer.passed and LLMCall.objects.get(job=first).validated  # validated once it passed
        # Online, the same request is now a cache hit; in another batch job too, with no batch at all.
        assert llm.chat(stage="conversations", messages=MSG, model="m").cached
        second = GenerationJob.objects.create(name="b", status="running")
        assert _ask(second).passed and LLMBatch.objects.filter(job=second).count() == 0
        assert BatchRequest.objects.get(job=second).state == "done"
        # Run again (an item deferred on a later call re-runs from the start): no second cache row.
        _ask(second)
        assert LLMCall.objects.filter(job=second).values_list("outcome", flat=True).get() == "cached"
        assert len(fake.batch_store.lines) == 1


def test_failing_reply_is_repaired_in_the_next_batch(settings):
    replies = iter([Reply.wrong_shape(), Reply(content=GOOD)])
    with FakeOpenAI(lambda body, n: next(replies)) as fake:
        point_settings_at(settings, fake, LLM_CACHE=False)
        job = GenerationJob.objects.create(name="r", status="running")
        with pytest.raises(llm.LLMDeferred):
            _ask(job)
        _poll_until_quiet()
        with pytest.raises(llm.LLMDeferred):  # the first reply failed: its repair turn waits for a batch
            _ask(job)
        _poll_until_quiet()
        answer = _ask(job)
        assert answer.passed and answer.repairs == 1
        assert list(LLMCall.objects.filter(job=job).values_list("repair", "outcome")) == [(0, "invalid"), (1, "ok")]
        assert LLMBatch.objects.filter(job=job).count() == 2 and fake.request_count == 0


def test_line_refused_for_good_fails_the_request(settings):
    with FakeOpenAI(lambda body, n: Reply.client_error(400, "context length exceeded")) as fake:
        point_settings_at(settings, fake, LLM_CACHE=False)
        job = GenerationJob.objects.create(name="f", status="running")
        with pytest.raises(llm.LLMDeferred):
            _ask(job)
        assert _poll_until_quiet() == [(job.pk, "conversations", "k")]
        with pytest.raises(llm.LLMFailed, match="HTTP 400"):
            _ask(job)
        assert LLMCall.objects.get(job=job).outcome == "error"


def test_stopped_job_sends_nothing_more(settings):
    with FakeOpenAI(lambda body, n: Reply(content=GOOD)) as fake:
        point_settings_at(settings, fake, LLM_CACHE=False)
        job = GenerationJob.objects.create(name="s", status="running")
        with pytest.raises(llm.LLMDeferred):
            _ask(job)
        GenerationJob.objects.filter(pk=job.pk).update(status="cancelling")
        assert _poll_until_quiet() == [(job.pk, "conversations", "k")]  # its item runs and finishes
        assert BatchRequest.objects.get().state == "failed" and not LLMBatch.objects.exists()
        assert fake.batch_store.lines == []


def test_generate_command_batch_flag(settings):
    from io import StringIO

    from django.core.management import CommandError, call_command

    with FakeOpenAI() as fake:
        point_settings_at(settings, fake)
        with pytest.raises(CommandError, match="--batch needs a worker"):
            call_command("generate", "--intents", "1", "--batch", "--inline", stdout=StringIO())
        # Queued after commit (never, inside this test's transaction): the job's settings are what is checked.
        call_command("generate", "--intents", "1", "--batch", stdout=StringIO())
        assert GenerationJob.objects.get().config["batch"] is True

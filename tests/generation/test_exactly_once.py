"""Exactly-once item processing: an item delivered twice, or seen by two worker processes, makes one call."""
from __future__ import annotations

import os
import threading
import time
from collections import Counter

import pytest

from generation import services
from generation.heartbeat import heartbeat_send
from generation.llm.accounting import HOST
from generation.models import Conversation, GenerationJob, ItemClaim, LLMCall, StageProgress, Test, WorkerHeartbeat
from generation.services.jobs import job_advance
from generation.stages import plan
from tests.conftest import wait_for
from tests.fake_openai import FakeOpenAI, Reply, point_settings_at
from tests.generation.scripts import conversation_for, import_document
from tests.generation.test_worker_jobs import no_duplicates, wait_job

ITEMS = 32  # conversations: two distinct paths in each of ITEMS/2 imported flowgraphs
CONFIG = {"paths": 2, "conversations": "llm", "sampler": "random", "seed": 1, "cache": False}


def conversation_reply(body: dict, n: int) -> Reply:
    return Reply(content=conversation_for(body))


def wait_ready(worker, timeout: float = 60) -> None:
    """Until this worker process itself answers a heartbeat (another running worker may answer too)."""
    nonces: list[str] = []

    def answered() -> bool:
        if not nonces or WorkerHeartbeat.objects.filter(nonce=nonces[-1]).exists():
            nonces.append(heartbeat_send())
        return WorkerHeartbeat.objects.filter(nonce__in=nonces, pid=worker.proc.pid).exists()

    wait_for(answered, timeout=timeout, interval=0.1, message=f"the worker to start\n{worker.log()[-2000:]}")


def assert_one_call_per_item(job: GenerationJob, fake: FakeOpenAI) -> None:
    stage = StageProgress.objects.get(job=job, stage="conversations")
    assert stage.total == ITEMS and stage.done == ITEMS
    per_key = Counter(LLMCall.objects.filter(job=job, stage="conversations").values_list("key", flat=True))
    assert len(per_key) == ITEMS and set(per_key.values()) == {1}, per_key
    assert fake.request_count == ITEMS
    assert Conversation.objects.filter(job=job).count() == ITEMS
    assert Test.objects.filter(job=job).count() > 0
    no_duplicates(job)


@pytest.mark.worker
@pytest.mark.slow
def test_two_worker_processes_call_once_per_item(settings, celery_worker_factory):
    """Two worker processes on one job, a second joining mid-stage, and every item published twice."""
    from generation.tasks import item_run_task

    with FakeOpenAI(conversation_reply, latency=0.3, max_concurrency=4) as fake:
        env = point_settings_at(settings, fake, LLM_MAX_CONCURRENCY=2, LLM_CACHE=False)
        first = celery_worker_factory(extra_env=env, concurrency=3)
        wait_ready(first)
        job = services.job_create(config=CONFIG, import_data=import_document(ITEMS // 2))
        wait_for(lambda: StageProgress.objects.get(job=job, stage="conversations").done >= 2, timeout=60,
                 message=f"conversations to start\n{first.log()[-3000:]}")
        # A second process joins (its start-up recovery runs while the job is live) ...
        second = celery_worker_factory(extra_env=env, concurrency=3)
        wait_ready(second)
        # ... and every item is published once more (a redelivery, a re-publishing after a crash).
        for key in plan(job, "conversations"):
            item_run_task.delay(job.pk, "conversations", key)
        services.job_resume(job=job)  # and once more what is neither done nor being processed
        job = wait_job(job.pk, second, 120)
        assert job.status == "succeeded", job.error
        assert_one_call_per_item(job, fake)
    assert "Traceback" not in first.log() + second.log()


def _job_at_conversations(settings, fake: FakeOpenAI) -> tuple[GenerationJob, list[str]]:
    """A job whose conversations stage is published but not run: returns the job and the item keys."""
    point_settings_at(settings, fake, LLM_CACHE=False)
    job = services.job_create(config=CONFIG, import_data=import_document(2), enqueue=False)
    published: list[tuple[str, str]] = []

    def publish(stage: str, key: str) -> None:
        if stage == "conversations":
            published.append((stage, key))
        else:
            services.item_run(job_id=job.pk, stage=stage, key=key)

    job_advance(job_id=job.pk, publish=publish)
    assert StageProgress.objects.get(job=job, stage="conversations").state == "running"
    return job, [key for _, key in published]


def test_the_same_item_delivered_twice_makes_one_call(settings, transactional_db):
    with FakeOpenAI(conversation_reply) as fake:
        job, keys = _job_at_conversations(settings, fake)
        key = keys[0]
        assert services.item_run(job_id=job.pk, stage="conversations", key=key, delivery="a") is False
        # The same message again (a retry), and another message for the same item (a re-publishing).
        services.item_run(job_id=job.pk, stage="conversations", key=key, delivery="a")
        services.item_run(job_id=job.pk, stage="conversations", key=key, delivery="b")
        assert fake.request_count == 1
        assert LLMCall.objects.filter(job=job, key=key).count() == 1


def test_concurrent_deliveries_of_one_item_make_one_call(settings, transactional_db):
    with FakeOpenAI(conversation_reply, latency=0.3) as fake:
        job, keys = _job_at_conversations(settings, fake)
        errors: list[BaseException] = []

        def deliver(delivery: str) -> None:
            from django.db import connection

            try:
                services.item_run(job_id=job.pk, stage="conversations", key=keys[0], delivery=delivery)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=deliver, args=(f"d{i}",)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not errors
        assert fake.request_count == 1
        assert StageProgress.objects.get(job=job, stage="conversations").done == 1


def test_a_claim_held_by_a_live_process_is_left_alone_and_a_dead_ones_taken_over(settings, transactional_db):
    with FakeOpenAI(conversation_reply) as fake:
        job, keys = _job_at_conversations(settings, fake)
        live, dead = keys[0], keys[1]
        ItemClaim.objects.create(job=job, stage="conversations", key=live, owner=f"{HOST}:{os.getppid()}",
                                 delivery="held")
        dead_pid = _dead_pid()
        ItemClaim.objects.create(job=job, stage="conversations", key=dead, owner=f"{HOST}:{dead_pid}",
                                 delivery="lost")
        services.item_run(job_id=job.pk, stage="conversations", key=live, delivery="copy")
        assert fake.request_count == 0  # the live holder makes the call, not this copy
        services.item_run(job_id=job.pk, stage="conversations", key=dead, delivery="resent")
        assert fake.request_count == 1
        assert ItemClaim.objects.get(job=job, stage="conversations", key=dead).delivery == "resent"
        # Recovery re-sends the dead worker's items only; the live one's stays with its holder.
        from generation.services.jobs import _items_to_resend

        sp = StageProgress.objects.get(job=job, stage="conversations")
        from django.utils import timezone

        resend = _items_to_resend(job, sp, only_lost=True, now=timezone.now())
        assert resend == []  # nothing lost: the live holder has one, the rest are queued


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    time.sleep(0.05)
    return proc.pid


def test_recovery_resends_only_what_a_dead_worker_may_have_held(settings, transactional_db):
    from django.utils import timezone

    from generation.services.jobs import _items_to_resend

    with FakeOpenAI(conversation_reply) as fake:
        job, keys = _job_at_conversations(settings, fake)
        sp = StageProgress.objects.get(job=job, stage="conversations")
        # A healthy job (nothing claimed yet, progress just now): a starting worker re-sends nothing.
        assert _items_to_resend(job, sp, only_lost=True, now=timezone.now()) == []
        # An explicit resume re-sends what nobody holds.
        assert sorted(_items_to_resend(job, sp, only_lost=False, now=timezone.now())) == sorted(keys)
        # A worker died holding keys[0]: that item, and the never-claimed ones it may have reserved.
        ItemClaim.objects.create(job=job, stage="conversations", key=keys[0], owner=f"{HOST}:{_dead_pid()}",
                                 delivery="lost")
        ItemClaim.objects.create(job=job, stage="conversations", key=keys[1], owner=f"{HOST}:{os.getppid()}",
                                 delivery="live")
        resend = _items_to_resend(job, sp, only_lost=True, now=timezone.now())
        assert sorted(resend) == sorted([keys[0], *keys[2:]])
        assert fake.request_count == 0


@pytest.fixture
def fresh_recovery(monkeypatch):
    """The process's memory of what recovery already re-sent, empty for this test."""
    from generation.services import jobs

    monkeypatch.setattr(jobs, "RECOVERED", jobs._Recovered())


def test_periodic_recovery_resends_a_dead_workers_unclaimed_items_once(settings, transactional_db, fresh_recovery):
    """Recovery runs every JOB_RECOVERY_SECONDS in every worker: what a dead worker may have reserved
    is re-sent once per dead worker (its claims stay on the items it finished), not on every round;
    its unfinished claimed item until someone takes it over; no progress re-sends at most once a minute."""
    from datetime import timedelta

    from django.utils import timezone

    from generation.services.jobs import PLANNING_STALE, _items_to_resend

    with FakeOpenAI(conversation_reply) as fake:
        job, keys = _job_at_conversations(settings, fake)
        sp = StageProgress.objects.get(job=job, stage="conversations")
        now = timezone.now()
        ItemClaim.objects.create(job=job, stage="conversations", key=keys[0], owner=f"{HOST}:{_dead_pid()}",
                                 delivery="lost")
        assert sorted(_items_to_resend(job, sp, only_lost=True, now=now)) == sorted([keys[0], *keys[1:]])
        assert _items_to_resend(job, sp, only_lost=True, now=now) == [keys[0]]  # the next round
        # Another worker dies holding keys[1]: its item and the unclaimed ones, once more.
        ItemClaim.objects.create(job=job, stage="conversations", key=keys[1], owner=f"{HOST}:{_dead_pid()}",
                                 delivery="lost2")
        assert sorted(_items_to_resend(job, sp, only_lost=True, now=now)) == sorted(keys)
        assert sorted(_items_to_resend(job, sp, only_lost=True, now=now)) == sorted(keys[:2])
        # No progress for longer than PLANNING_STALE: the unclaimed ones once, then not before another.
        later = now + PLANNING_STALE + timedelta(seconds=5)
        assert sorted(_items_to_resend(job, sp, only_lost=True, now=later)) == sorted(keys)
        assert sorted(_items_to_resend(job, sp, only_lost=True, now=later + timedelta(seconds=20))) == sorted(keys[:2])
        much_later = later + PLANNING_STALE + timedelta(seconds=5)
        assert sorted(_items_to_resend(job, sp, only_lost=True, now=much_later)) == sorted(keys)
        assert fake.request_count == 0

"""Webhook deliveries through a real Celery worker: a 500 is retried after the backoff and the
receiver verifies every signature."""
from __future__ import annotations

import time

import pytest

from webhooks import services
from webhooks.models import Delivery
from tests.webhooks.receiver import Receiver


@pytest.mark.worker
@pytest.mark.slow
def test_the_worker_retries_after_a_500_and_delivers(celery_worker_factory, settings):
    worker = celery_worker_factory(extra_env={"WEBHOOK_BACKOFF_BASE": "0.3", "WEBHOOK_MAX_ATTEMPTS": "3"})
    hook, secret = services.webhook_create(name="ci", url="http://127.0.0.1:9/")
    with Receiver(secret, statuses=[500]) as receiver:
        hook.url = receiver.url
        hook.save(update_fields=["url"])
        services.emit("release.created", release_id=1, name="r", version=1)  # autocommit: queued at once
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            d = Delivery.objects.first()
            if d is not None and d.state in ("delivered", "failed"):
                break
            time.sleep(0.2)
        else:
            print(worker.log()[-4000:])
    d = Delivery.objects.get()
    assert (d.state, d.attempts, d.response_status) == ("delivered", 2, 200), worker.log()[-3000:]
    assert [r["status"] for r in receiver.received] == [500, 200] and all(r["valid"] for r in receiver.received)
    assert secret not in worker.log()

"""A task really executed by a separate `celery worker` process through the configured broker."""
import os

import pytest
from django.conf import settings

from generation.heartbeat import heartbeat_send
from generation.models import WorkerHeartbeat
from tests.conftest import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_worker_process_runs_task_through_broker(celery_worker_factory):
    worker = celery_worker_factory()
    nonce = heartbeat_send()
    beat = wait_for(lambda: WorkerHeartbeat.objects.filter(nonce=nonce).first(), timeout=60,
                    message=f"the worker to run the heartbeat task\n{worker.log()}")
    # Written by the worker process, not by this one.
    assert beat.pid == worker.proc.pid
    assert beat.pid != os.getpid()
    expected = settings.CELERY_BROKER_URL.split(":", 1)[0]
    assert beat.broker == expected


def test_default_broker_is_filesystem_without_server():
    if os.environ.get("CELERY_BROKER_URL"):
        pytest.skip("CELERY_BROKER_URL is set for this run")
    assert settings.CELERY_BROKER_URL == "filesystem://"
    options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
    assert options["polling_interval"] <= 0.05
    assert options["data_folder_in"].startswith(str(settings.VAR_DIR))


def test_redis_broker_when_configured():
    url = os.environ.get("CELERY_BROKER_URL", "")
    if not url.startswith("redis://"):
        pytest.skip("runs when CELERY_BROKER_URL points at Redis (CI does)")
    assert settings.CELERY_BROKER_URL == url


def test_filesystem_messages_appear_whole(tmp_path):
    """A consumer listing the folder never sees a message file before it is completely written."""
    from kombu import Connection

    folder = tmp_path / "q"
    folder.mkdir()
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder), "control_folder": str(tmp_path / "c")}
    with Connection("filesystem://", transport="almita_web.broker:Transport", transport_options=options) as conn:
        queue = conn.SimpleQueue("jobs")
        queue.put({"payload": "x" * 200_000})
        names = os.listdir(folder)
        assert len(names) == 1 and names[0].endswith(".jobs.msg") and not names[0].startswith(".")
        message = queue.get(timeout=5)
        assert message.payload == {"payload": "x" * 200_000}
        message.ack()
        queue.close()


def test_celery_uses_the_safe_filesystem_transport():
    if settings.CELERY_BROKER_URL != "filesystem://":
        pytest.skip("filesystem broker not in use")
    from almita_web.celery import app

    with app.connection_for_write() as conn:
        assert type(conn.transport).__module__ == "almita_web.broker"

"""A worker liveness check: the web process sends a nonce, a worker writes it back to the database.

This exercises the whole path a real job takes (broker → worker process → database), which is
what an admin needs to know when a job sits in "queued".
"""
from __future__ import annotations

import os
import socket
import uuid
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from generation.models import WorkerHeartbeat


@shared_task(name="generation.heartbeat")
def heartbeat(nonce: str) -> None:
    """Idempotent: the nonce is unique, so a redelivered message writes nothing new."""
    WorkerHeartbeat.objects.get_or_create(
        nonce=nonce,
        defaults={
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
            "broker": settings.CELERY_BROKER_URL.split(":", 1)[0],
        },
    )


def heartbeat_send() -> str:
    nonce = uuid.uuid4().hex
    heartbeat.delay(nonce)
    return nonce


def worker_seen_recently(minutes: int = 5) -> WorkerHeartbeat | None:
    return WorkerHeartbeat.objects.filter(created_at__gte=timezone.now() - timedelta(minutes=minutes)).first()

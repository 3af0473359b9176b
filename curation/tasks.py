"""Periodic curation work run by Celery beat."""
from __future__ import annotations

from celery import shared_task

from curation.reviews.services import send_digest


@shared_task(name="curation.send_digest")
def send_digest_task() -> tuple[int, int]:
    return send_digest()

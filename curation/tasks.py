"""Curation work run by the Celery worker: the daily digest (beat) and the analytics table."""
from __future__ import annotations

from celery import shared_task

from curation.reviews.services import send_digest


@shared_task(name="curation.send_digest")
def send_digest_task() -> tuple[int, int]:
    return send_digest()


@shared_task(name="curation.analytics_recompute")
def analytics_recompute_task() -> float:
    """Compute and store the whole analytics table (curation.agreement.precompute); no user acts
    here, and the figures are shown only to researchers and admins. Returns the seconds taken."""
    from curation.agreement.services import recompute_analytics as recompute

    return recompute()["seconds"]

"""Thin Celery task for webhook deliveries."""
from __future__ import annotations

from celery import shared_task

from projects.celery import in_project_of
from webhooks import services


@shared_task(bind=True, ignore_result=True, max_retries=None)
@in_project_of("webhooks.Delivery", "delivery_id", through="webhook__project_id")
def deliver_webhook(self, delivery_id: int) -> None:
    """One attempt at delivering one event to one webhook; on a transient failure (HTTP 429/5xx,
    timeout, connection error) the task is retried after an exponential backoff, up to
    WEBHOOK_MAX_ATTEMPTS attempts in all, the count kept on the Delivery row. Idempotent: a
    delivery already delivered or failed is skipped, so a redelivered message sends nothing twice
    (receivers still dedupe on X-Almita-Delivery, as at-least-once delivery requires)."""
    outcome, wait = services.delivery_attempt(delivery_id=delivery_id)
    if outcome == "retry":
        raise self.retry(countdown=wait)

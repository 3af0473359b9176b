"""Webhook workflows: register, emit events, deliver (signed, retried with backoff).

`emit(event, **data)` is the one line other apps call inside their transaction: after commit it
writes one Delivery per subscribed webhook and enqueues its Celery task; a rolled-back
transaction emits nothing. Delivery failures never reach the caller.
"""
from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from projects.scoping import rows_to_write
from webhooks import crypto
from webhooks.models import EVENT_NAMES, TEST_EVENT, Delivery, DeliveryState, Webhook

log = logging.getLogger(__name__)
TRANSIENT = frozenset({408, 425, 429, 500, 502, 503, 504})
MAX_BACKOFF = 3600.0


class WebhookError(ValueError):
    pass


# --------------------------------------------------------------------------- registration


def _clean_events(events: list[str] | None) -> list[str]:
    events = list(dict.fromkeys(events or []))
    unknown = set(events) - set(EVENT_NAMES)
    if unknown:
        raise WebhookError(f"unknown event(s): {', '.join(sorted(unknown))}")
    return events


def _clean_url(url: str) -> str:
    url = (url or "").strip()
    if not url.startswith(("http://", "https://")):
        raise WebhookError("the webhook URL must start with http:// or https://")
    return url


@transaction.atomic
def webhook_create(*, name: str, url: str, events: list[str] | None = None, secret: str = "",
                   created_by=None) -> tuple[Webhook, str]:
    """A new webhook and its secret (generated unless given): the caller shows it once; only
    its encrypted form and a 4-character hint are kept."""
    secret = (secret or "").strip() or crypto.new_secret()
    if len(secret) < 16:
        raise WebhookError("a webhook secret needs at least 16 characters")
    hook = Webhook.objects.create(name=(name or "").strip()[:200] or url, url=_clean_url(url),
                                  events=_clean_events(events), secret_encrypted=crypto.encrypt(secret),
                                  secret_hint=crypto.hint(secret), created_by=created_by)
    return hook, secret


@transaction.atomic
def webhook_rotate_secret(*, webhook: Webhook) -> str:
    secret = crypto.new_secret()
    Webhook.objects.filter(pk=webhook.pk).update(secret_encrypted=crypto.encrypt(secret), secret_hint=crypto.hint(secret))
    return secret


@transaction.atomic
def webhook_set_active(*, webhook: Webhook, active: bool) -> None:
    Webhook.objects.filter(pk=webhook.pk).update(active=active)


# --------------------------------------------------------------------------- events


def _body(event: str, data: dict[str, Any]) -> str:
    return json.dumps({"event": event, "created_at": timezone.now().isoformat(), "data": data},
                      ensure_ascii=False, sort_keys=True, default=str)


def _enqueue(delivery_ids: list[int]) -> None:
    from webhooks.tasks import deliver_webhook

    for pk in delivery_ids:
        try:
            deliver_webhook.delay(pk)
        except Exception as exc:  # noqa: BLE001 - a broker outage must not break the page that emitted
            log.error("webhook delivery %s could not be queued: %s", pk, type(exc).__name__)


def fan_out(event: str, data: dict[str, Any], project_id: int | None = None) -> list[int]:
    """One Delivery per webhook of the project subscribed to `event`, each queued. Returns their ids.
    ``project_id``: the project the event happened in (default: the current one, else Default)."""
    from projects.context import project_for_new_row

    pid = project_id if project_id is not None else project_for_new_row()
    active = Webhook._base_manager.filter(active=True, project_id=pid).order_by("name", "id")
    hooks = [h for h in active if h.wants(event)]
    if not hooks:
        return []
    body = _body(event, data)
    ids = [Delivery.objects.create(webhook=h, event=event, body=body).pk for h in hooks]
    _enqueue(ids)
    return ids


def emit(event: str, **data: Any) -> None:
    """Notify the webhooks subscribed to `event` once the current transaction commits."""
    if event not in EVENT_NAMES:
        raise WebhookError(f"unknown event {event!r}")

    from projects.context import current_project, project_for_new_row

    # Only the project's own webhooks hear of it (issue #30); the payload names the project.
    pid = project_for_new_row()
    project = current_project()
    data = {**data, "project": project.slug if project is not None else "default"}

    def send() -> None:
        try:
            fan_out(event, data, pid)
        except Exception as exc:  # noqa: BLE001 - notifications never fail the work they report
            log.error("webhook event %s not recorded: %s", event, type(exc).__name__)

    transaction.on_commit(send)


@transaction.atomic
def send_test_event(*, webhook: Webhook, user=None) -> Delivery:
    body = _body(TEST_EVENT, {"webhook": webhook.pk, "message": "Test event from Almita Studio",
                              "sent_by": getattr(user, "username", None)})
    delivery = Delivery.objects.create(webhook=webhook, event=TEST_EVENT, body=body)
    transaction.on_commit(lambda: _enqueue([delivery.pk]))
    return delivery


# --------------------------------------------------------------------------- delivery


def backoff(attempt: int) -> float:
    """Seconds before attempt `attempt + 1`: base × 2^(attempt − 1), capped at an hour."""
    return min(settings.WEBHOOK_BACKOFF_BASE * (2 ** max(0, attempt - 1)), MAX_BACKOFF)


def signed_headers(secret: str, delivery: Delivery, body: bytes, timestamp: int) -> dict[str, str]:
    return {"Content-Type": "application/json", "User-Agent": "AlmitaStudio-Webhooks/1",
            crypto.EVENT_HEADER: delivery.event, crypto.DELIVERY_HEADER: str(delivery.uuid),
            crypto.TIMESTAMP_HEADER: str(timestamp), crypto.SIGNATURE_HEADER: crypto.sign(secret, timestamp, body)}


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int | None, str, str]:
    """(status or None, response excerpt, transport error)."""
    req = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=settings.WEBHOOK_TIMEOUT) as resp:
            return resp.status, resp.read(500).decode("utf-8", "replace"), ""
    except urllib.error.HTTPError as exc:
        return exc.code, (exc.read(500) or b"").decode("utf-8", "replace"), ""
    except (TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        return None, "", f"{type(exc).__name__}: {reason}"[:500]


def _unfinished(delivery_id: int):
    return rows_to_write(Delivery).filter(pk=delivery_id, state__in=[DeliveryState.PENDING, DeliveryState.RETRYING])


def delivery_attempt(*, delivery_id: int) -> tuple[str, float]:
    """One attempt. Returns ("delivered" | "failed" | "retry" | "skipped", seconds to wait before
    the next attempt). Idempotent: a delivery that is already final is skipped."""
    # Compare-and-set on the row's own state (rows_to_write): through Delivery.objects (a join to the
    # webhook's project) PostgreSQL would not re-check the state after waiting for a concurrent final
    # write's row lock, and a redelivered message would post a delivered event again.
    claimed = _unfinished(delivery_id).update(attempts=F("attempts") + 1, last_attempt_at=timezone.now())
    if not claimed:
        return "skipped", 0.0
    delivery = Delivery.objects.select_related("webhook").get(pk=delivery_id)
    fields: dict[str, Any] = {}
    try:
        secret = crypto.decrypt(delivery.webhook.secret_encrypted)
    except crypto.SecretUnreadable as exc:
        _unfinished(delivery_id).update(state=DeliveryState.FAILED, error=str(exc)[:500], next_attempt_at=None)
        return "failed", 0.0
    body = delivery.body.encode()
    started = time.monotonic()
    status, excerpt, error = _post(delivery.webhook.url, body, signed_headers(secret, delivery, body, int(time.time())))
    fields.update(response_status=status, response_excerpt=excerpt[:500], error=error,
                  duration_ms=int((time.monotonic() - started) * 1000))
    if status is not None and 200 <= status < 300:
        outcome, wait = "delivered", 0.0
        fields.update(state=DeliveryState.DELIVERED, next_attempt_at=None)
    elif (status is None or status in TRANSIENT) and delivery.attempts < settings.WEBHOOK_MAX_ATTEMPTS:
        outcome, wait = "retry", backoff(delivery.attempts)
        fields.update(state=DeliveryState.RETRYING, next_attempt_at=timezone.now() + timedelta(seconds=wait))
    else:
        outcome, wait = "failed", 0.0
        if status is not None and not error:
            fields["error"] = (f"HTTP {status}" + (" (not retried)" if status not in TRANSIENT else
                                                   f" after {delivery.attempts} attempts"))
        elif error:
            fields["error"] = f"{error} after {delivery.attempts} attempts"[:500]
        fields.update(state=DeliveryState.FAILED, next_attempt_at=None)
    _unfinished(delivery_id).update(**fields)  # a final state a concurrent attempt wrote stays
    log.info("webhook %s delivery %s (%s) attempt %s: %s", delivery.webhook_id, delivery.uuid, delivery.event,
             delivery.attempts, outcome)
    return outcome, wait


def deliver_inline(*, delivery_id: int, sleep=time.sleep) -> str:
    """Every attempt of one delivery in this process (tests, the command line)."""
    while True:
        outcome, wait = delivery_attempt(delivery_id=delivery_id)
        if outcome != "retry":
            return outcome
        sleep(wait)

"""Registered webhooks and one row per delivery (the delivery log)."""
from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from projects.scoping import ProjectManager, owner_scoped_manager, project_field

EVENTS = [
    ("item.fully_reviewed", "An item received all its reviews"),
    ("item.adjudicated", "An adjudicator decided an item"),
    ("job.finished", "A generation job finished (succeeded, failed or cancelled)"),
    ("release.created", "A release was created"),
    ("evaluation.finished", "An evaluation run or session run finished"),
]
EVENT_NAMES = [name for name, _ in EVENTS]
TEST_EVENT = "webhook.test"


class Webhook(models.Model):
    project = project_field()
    objects = ProjectManager()
    name = models.CharField(max_length=200)
    url = models.URLField(max_length=500)
    events = models.JSONField(default=list, help_text="event names; empty means every event")
    # The signing secret, encrypted with a key derived from SECRET_KEY (webhooks/crypto.py): HMAC
    # signing needs the secret itself, so it cannot be hashed; pages show only `secret_hint`.
    secret_encrypted = models.TextField()
    secret_hint = models.CharField(max_length=16)
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

    def wants(self, event: str) -> bool:
        return self.active and (event == TEST_EVENT or not self.events or event in self.events)


class DeliveryState(models.TextChoices):
    PENDING = "pending", "Pending"
    RETRYING = "retrying", "Retrying"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"


class Delivery(models.Model):
    """One event for one webhook. The body is fixed at creation (the same bytes on every attempt);
    each attempt signs it with a fresh timestamp. `uuid` is the delivery id receivers dedupe on."""
    objects = owner_scoped_manager("webhook__project_id")

    State = DeliveryState

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    event = models.CharField(max_length=64)
    body = models.TextField()
    state = models.CharField(max_length=16, choices=DeliveryState.choices, default=DeliveryState.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_excerpt = models.CharField(max_length=500, blank=True)
    error = models.CharField(max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.CheckConstraint(condition=Q(state__in=DeliveryState.values),
                                              name="delivery_state_valid")]
        indexes = [models.Index(fields=["webhook", "-created_at"])]

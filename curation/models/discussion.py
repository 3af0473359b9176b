"""What reviewers say to each other about an item, and what the app tells a user (issue #31).

A comment belongs to one review item; who may read it is decided in curation.reviews.discussion.
A notification is one message to one user (today: adjudication overturned your verdict), read in
the app and, when e-mail is configured, sent once in a daily digest.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from projects.scoping import owner_scoped_manager

from curation.models.reviews import ReviewItem


class Comment(models.Model):
    objects = owner_scoped_manager("item__project_id")
    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="item_comments")
    body = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.CheckConstraint(condition=~Q(body=""), name="comment_body_required")]


class Notification(models.Model):
    objects = owner_scoped_manager("item__project_id")
    class Kind(models.TextChoices):
        OVERTURNED = "overturned", "Your verdict was overturned"

    # No column index of its own: user_unread starts with it.
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications",
                             db_index=False)
    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="notifications")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    message = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)
    read_at = models.DateTimeField(null=True, blank=True)
    emailed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        # The navigation's unread count on every page: one index range per user.
        indexes = [models.Index(fields=["user", "read_at"], name="notification_user_unread")]

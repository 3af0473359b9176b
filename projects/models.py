"""A project and its members; the settings its work uses (issue #30 items 1-3).

The LLM endpoint of a project is stored as a base URL and the NAME of the environment variable
that holds its key: the key itself never reaches the database, and two projects' keys never mix.
"""
from __future__ import annotations

import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone

ROLE_CHOICES = [("admin", "Admin"), ("annotator", "Annotator"), ("adjudicator", "Adjudicator"),
                ("researcher", "Researcher")]
REVIEW_STAGES = ("procedure", "flowgraph", "conversation_graph", "conversation")
DEFAULT_SLUG = "default"
SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,48}$")
ENV_NAME_RE = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")


def site_reviews_needed(stage: str | None = None) -> int:
    """The site-wide default (environment): REVIEWS_PER_STAGE[stage], else REVIEWS_PER_ITEM."""
    per_stage = getattr(settings, "REVIEWS_PER_STAGE", {}) or {}
    return int((per_stage.get(stage) if stage else None) or getattr(settings, "REVIEWS_PER_ITEM", 2) or 2)


def all_review_stages() -> list[str]:
    return list(REVIEW_STAGES)


def validate_key_env(value: str) -> None:
    if value and not ENV_NAME_RE.match(value):
        raise ValidationError("the NAME of an environment variable (A-Z, 0-9, _), never the key itself")


class Project(models.Model):
    slug = models.SlugField(max_length=50, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)
    # --- settings (item 3) ---
    # None: not set by the project's admins, the site's default applies (REVIEWS_PER_STAGE for the
    # stage, else REVIEWS_PER_ITEM); a number set on the settings page wins over both.
    reviews_per_item = models.PositiveSmallIntegerField(null=True, blank=True, default=None)
    claim_minutes = models.PositiveIntegerField(default=30)
    reviewed_stages = models.JSONField(default=all_review_stages, blank=True)
    # {"intents": "gpt-4o-mini", ...}: a stage missing here uses the site's LLM_MODEL_<STAGE>.
    default_models = models.JSONField(default=dict, blank=True)
    # Extra instructions prefilled in the job form (the stage prompts themselves stay the site's).
    default_instructions = models.TextField(blank=True)
    llm_base_url = models.URLField(blank=True, help_text="empty: the site's OPENAI_BASE_URL")
    llm_key_env = models.CharField(max_length=100, blank=True, validators=[validate_key_env],
                                   help_text="empty: OPENAI_API_KEY")

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(reviews_per_item__gte=1), name="project_needs_a_review"),
            models.CheckConstraint(condition=Q(claim_minutes__gte=1), name="project_claim_minutes_positive"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def prefix(self) -> str:
        return f"/p/{self.slug}/"

    def reviews_needed(self, stage: str) -> int:
        """Reviews an item of `stage` needs: the project's own setting when its admins set one,
        else the site's default for the stage (REVIEWS_PER_STAGE), else REVIEWS_PER_ITEM."""
        if self.reviews_per_item:
            return int(self.reviews_per_item)
        return site_reviews_needed(stage)

    def reviews_stage(self, stage: str) -> bool:
        return stage in (self.reviewed_stages or [])


class Membership(models.Model):
    """One role of one user in one project (a user with two roles has two rows)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=ROLE_CHOICES)

    class Meta:
        ordering = ["project", "user", "role"]
        constraints = [
            models.UniqueConstraint(fields=["user", "project", "role"], name="membership_unique_role"),
            models.CheckConstraint(condition=Q(role__in=[r for r, _ in ROLE_CHOICES]), name="membership_role_valid"),
        ]
        indexes = [models.Index(fields=["project", "role"], name="membership_project_role")]

    def __str__(self) -> str:
        return f"{self.user} {self.role} in {self.project}"

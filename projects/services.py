"""Creating projects, giving people roles in them, and changing a project's settings."""
from __future__ import annotations

from typing import Any

from django.db import transaction

from projects import context
from projects.models import ROLE_CHOICES, Project

ROLES = [r for r, _ in ROLE_CHOICES]
SETTINGS_FIELDS = ("name", "reviews_per_item", "claim_minutes", "reviewed_stages", "default_models",
                   "default_instructions", "llm_base_url", "llm_key_env")


class ProjectError(ValueError):
    """A refused change; the message is shown to the user."""


def project_create(*, slug: str, name: str, **settings: Any) -> Project:
    if Project.objects.filter(slug=slug).exists():
        raise ProjectError(f"A project named {slug!r} exists already.")
    project = Project(slug=slug, name=name, **settings)
    project.full_clean()
    project.save()
    return project


@transaction.atomic
def member_set(*, project: Project, user, roles: list[str]) -> None:
    """The user's roles in the project become exactly `roles` (none: no longer a member)."""
    from projects.models import Membership

    unknown = set(roles) - set(ROLES)
    if unknown:
        raise ProjectError(f"Unknown role: {', '.join(sorted(unknown))}")
    Membership.objects.filter(project=project, user=user).exclude(role__in=roles).delete()
    for role in roles:
        Membership.objects.get_or_create(project=project, user=user, role=role)


def settings_snapshot(project: Project) -> dict[str, Any]:
    return {f: getattr(project, f) for f in SETTINGS_FIELDS}


@transaction.atomic
def settings_update(*, project: Project, values: dict[str, Any]) -> tuple[dict, dict]:
    """Save the changed settings; returns (before, after) of the fields that changed."""
    locked = Project.objects.select_for_update().get(pk=project.pk)
    before_all = settings_snapshot(locked)
    for field, value in values.items():
        if field not in SETTINGS_FIELDS:
            raise ProjectError(f"{field} is not a project setting")
        setattr(locked, field, value)
    locked.full_clean()
    after_all = settings_snapshot(locked)
    changed = [f for f in SETTINGS_FIELDS if before_all[f] != after_all[f]]
    if changed:
        locked.save(update_fields=changed)
        context.forget_cached()
    return {f: before_all[f] for f in changed}, {f: after_all[f] for f in changed}

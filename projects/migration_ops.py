"""Migration helpers: every existing row of the owning models moves to the Default project.

Used by each app's `*_p30_projects` migration: the column is added nullable, filled with one
UPDATE per table (ids and relations untouched), then made NOT NULL.
"""
from __future__ import annotations

from django.conf import settings
from django.db import migrations


def _default_pk(apps) -> int:
    Project = apps.get_model("projects", "Project")
    project, _ = Project.objects.get_or_create(slug="default", defaults={
        "name": "Default", "reviews_per_item": getattr(settings, "REVIEWS_PER_ITEM", 2),
        "claim_minutes": getattr(settings, "CLAIM_MINUTES", 30)})
    return project.pk


def move_to_default(app_label: str, model_names: list[str]) -> migrations.RunPython:
    def forwards(apps, schema_editor):
        pk = _default_pk(apps)
        for name in model_names:
            apps.get_model(app_label, name)._base_manager.filter(project__isnull=True).update(project_id=pk)

    return migrations.RunPython(forwards, migrations.RunPython.noop)

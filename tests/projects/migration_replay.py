"""Run in a child process on an empty database: migrate to just before the projects migrations,
write one row of every owning model (and a role group), migrate, and print what became of them."""
from __future__ import annotations

import json
import os
import sys

APPS = ("generation", "curation", "evaluation", "webhooks")


def before_projects(loader) -> list[tuple[str, str]]:
    """Each app's migration just before its `p30_projects` one."""
    targets = []
    for app in APPS:
        name = next(n for (a, n) in loader.disk_migrations if a == app and "p30_projects" in n)
        parents = [p for p in loader.graph.node_map[(app, name)].parents if p.key[0] == app]
        targets.append(parents[0].key)
    return targets


def populate(apps) -> dict[str, int]:
    from django.utils import timezone

    now = timezone.now()
    User, Group = apps.get_model("auth", "User"), apps.get_model("auth", "Group")
    g = lambda model: apps.get_model(*model.split("."))  # noqa: E731
    user = User.objects.create(username="ann", password="x")
    boss = User.objects.create(username="boss", password="x")
    for name, who in (("annotator", user), ("admin", boss), ("researcher", boss)):
        who.groups.add(Group.objects.get_or_create(name=name)[0])
    job = g("generation.GenerationJob").objects.create(name="j", config={})
    intent = g("generation.Intent").objects.create(client="c", issue="i", name="n", job=job, key="intents/0")
    procedure = g("generation.Procedure").objects.create(intent=intent, text="1. Ask.", job=job, key="procedures/0")
    item = g("curation.ReviewItem").objects.create(stage="procedure", object_id=procedure.pk)
    review = g("curation.Review").objects.create(item=item, annotator=user, verdict="accept")
    guideline = g("curation.GuidelineVersion").objects.create(stage="procedure", version=1, summary="s")
    audit = g("curation.AuditEvent").objects.create(action="review", actor=user, item=item)
    release = g("curation.Release").objects.create(name="r", version=1, content_hash="0" * 64, manifest={})
    agent = g("evaluation.Agent").objects.create(name="a")
    run = g("evaluation.EvaluationRun").objects.create(agent=agent, release=release)
    hook = g("webhooks.Webhook").objects.create(name="h", url="http://x.test/", secret_encrypted="e", secret_hint="h")
    return {"job": job.pk, "intent": intent.pk, "procedure": procedure.pk, "item": item.pk, "review": review.pk,
            "guideline": guideline.pk, "audit": audit.pk, "release": release.pk, "agent": agent.pk, "run": run.pk,
            "webhook": hook.pk, "ann": user.pk, "boss": boss.pk, "created": str(now)}


def main() -> int:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")
    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    targets = before_projects(executor.loader)
    call_command("migrate", "auth", verbosity=0)
    for app, name in targets:
        call_command("migrate", app, name, verbosity=0)
    state = MigrationExecutor(connection).loader.project_state(targets + [("auth", "0012_alter_user_first_name_max_length")])
    ids = populate(state.apps)
    call_command("migrate", verbosity=0)

    from curation.models import AuditEvent, GuidelineVersion, Release, Review, ReviewItem
    from evaluation.models import Agent, EvaluationRun
    from generation.models import GenerationJob, Intent, Procedure
    from projects.models import Membership, Project
    from webhooks.models import Webhook

    rows = {"job": GenerationJob, "intent": Intent, "procedure": Procedure, "item": ReviewItem,
            "guideline": GuidelineVersion, "audit": AuditEvent, "release": Release, "agent": Agent,
            "run": EvaluationRun, "webhook": Webhook}
    found = {name: model._base_manager.filter(pk=ids[name]).values_list("project__slug", flat=True).first()
             for name, model in rows.items()}
    review = Review._base_manager.get(pk=ids["review"])
    procedure = Procedure._base_manager.get(pk=ids["procedure"])
    print(json.dumps({
        "vendor": connection.vendor, "projects": list(Project.objects.values_list("slug", flat=True)),
        "found": found, "relations_kept": review.item_id == ids["item"] and procedure.intent_id == ids["intent"]
        and procedure.job_id == ids["job"],
        "roles": sorted(Membership.objects.values_list("user__username", "project__slug", "role")),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Creates the Default project and turns every role group membership into a role in Default."""
from django.conf import settings
from django.db import migrations

ROLES = ("admin", "annotator", "adjudicator", "researcher")


def forwards(apps, schema_editor):
    Project = apps.get_model("projects", "Project")
    Membership = apps.get_model("projects", "Membership")
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    default, _ = Project.objects.get_or_create(slug="default", defaults={
        "name": "Default", "reviews_per_item": getattr(settings, "REVIEWS_PER_ITEM", 2),
        "claim_minutes": getattr(settings, "CLAIM_MINUTES", 30)})
    rows = []
    for user_id, role in User.groups.through.objects.filter(group__name__in=ROLES).values_list(
            "user_id", "group__name"):
        rows.append(Membership(user_id=user_id, project_id=default.pk, role=role))
    Membership.objects.bulk_create(rows, ignore_conflicts=True)


def backwards(apps, schema_editor):
    Membership = apps.get_model("projects", "Membership")
    Group = apps.get_model("auth", "Group")
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    groups = {name: Group.objects.get_or_create(name=name)[0] for name in ROLES}
    through = User.groups.through
    through.objects.bulk_create([through(user_id=m.user_id, group_id=groups[m.role].pk)
                                 for m in Membership.objects.filter(project__slug="default")],
                                ignore_conflicts=True)


class Migration(migrations.Migration):
    dependencies = [("projects", "0001_p30_projects"), ("auth", "0012_alter_user_first_name_max_length"),
                    migrations.swappable_dependency(settings.AUTH_USER_MODEL)]
    operations = [migrations.RunPython(forwards, backwards)]

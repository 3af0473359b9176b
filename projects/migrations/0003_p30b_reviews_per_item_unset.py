"""A project's "reviews per item" may be unset (the site's default applies); a value equal to the
site's REVIEWS_PER_ITEM, the one every project got before this setting could be left empty, is
taken as never set, so REVIEWS_PER_STAGE keeps applying to it."""
from django.conf import settings
from django.db import migrations, models


def forwards(apps, schema_editor):
    Project = apps.get_model("projects", "Project")
    Project.objects.filter(reviews_per_item=getattr(settings, "REVIEWS_PER_ITEM", 2)).update(reviews_per_item=None)


def backwards(apps, schema_editor):
    Project = apps.get_model("projects", "Project")
    Project.objects.filter(reviews_per_item__isnull=True).update(reviews_per_item=getattr(settings, "REVIEWS_PER_ITEM", 2))


class Migration(migrations.Migration):

    dependencies = [
        ("projects", "0002_p30_default_members"),
    ]

    operations = [
        migrations.AlterField(
            model_name="project",
            name="reviews_per_item",
            field=models.PositiveSmallIntegerField(blank=True, default=None, null=True),
        ),
        migrations.RunPython(forwards, backwards),
    ]

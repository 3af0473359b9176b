"""Release storage format 2 (issue #14, release speed): slim ReleaseTest rows.

Schema only. Existing releases keep format 1 (the field's default) and are not rewritten: their
rows stay whole and they download and verify as before; rewriting them would change the content
hash they were published with (manifests, webhooks, portable files) and hundreds of MB of rows.
New releases are format 2 (curation.release_freeze, read by curation.release_rows).
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('curation', '0004_i14_release_lz4'),
    ]

    operations = [
        migrations.AddField(
            model_name='release',
            name='format',
            field=models.PositiveSmallIntegerField(default=1),
        ),
        migrations.AddField(
            model_name='releasetest',
            name='context_len',
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='releasetest',
            name='procedure_id',
            field=models.PositiveBigIntegerField(blank=True, null=True),
        ),
    ]

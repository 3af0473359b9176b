"""Release storage format 2 (issue #14, release speed): slim ReleaseTest rows.

Schema only. Existing releases keep format 1 (the field's default) and are not rewritten: their
rows stay whole and they download and verify as before; rewriting them would change the content
hash they were published with (manifests, webhooks, portable files) and hundreds of MB of rows.
Also: the release foreign keys lose their own index (the unique constraints start with them).
New releases are format 2 (curation.release_freeze, read by curation.release_rows).
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('curation', '0004_i14_release_lz4'),
    ]

    operations = [
        # Each table's unique constraint starts with release_id: the FK's own index only cost writes.
        migrations.AlterField(
            model_name="releaserecord",
            name="release",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="records", to="curation.release"),
        ),
        migrations.AlterField(
            model_name="releasetest",
            name="release",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="entries", to="curation.release"),
        ),
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

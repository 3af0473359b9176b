"""Release rows lose the database constraint of their release foreign key (issue #14, release speed).

Schema only. release_create writes a release's ReleaseTest and ReleaseRecord rows in the transaction
that creates the Release row, so the constraint could not fail there, and PostgreSQL checked it
once per row at commit (deferred): 0.35-0.6 s of an 80,000-test release. Deleting a release still
deletes its rows (Django's on_delete=CASCADE). On PostgreSQL this drops two constraints; SQLite
rebuilds both tables (a copy of every stored release row).
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('curation', '0005_i14_release_format2'),
    ]

    operations = [
        migrations.AlterField(
            model_name='releaserecord',
            name='release',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='records', to='curation.release'),
        ),
        migrations.AlterField(
            model_name='releasetest',
            name='release',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='entries', to='curation.release'),
        ),
    ]

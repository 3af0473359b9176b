"""Issue #30: the project column; every existing row moves to Default, keeping its id."""

import django.db.models.deletion
import projects.context
from django.db import migrations, models

from projects.migration_ops import move_to_default


class Migration(migrations.Migration):
    # The UPDATE commits before the column becomes NOT NULL (PostgreSQL refuses ALTER TABLE
    # with the deferred foreign key checks of the same transaction pending).
    atomic = False

    dependencies = [
        ('projects', '0002_p30_default_members'),
        ('webhooks', '0001_i18_webhooks'),
    ]

    operations = [
        migrations.AddField(
            model_name='webhook',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        move_to_default('webhooks', ['webhook']),
        migrations.AlterField(
            model_name='webhook',
            name='project',
            field=models.ForeignKey(default=projects.context.project_for_new_row, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
    ]

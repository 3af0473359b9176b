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
        ('evaluation', '0007_i27t_action_labels'),
        ('projects', '0002_p30_default_members'),
    ]

    operations = [
        migrations.AddField(
            model_name='agent',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AddField(
            model_name='evaluationrun',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AddField(
            model_name='sessionrun',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        move_to_default('evaluation', ['agent', 'evaluationrun', 'sessionrun']),
        migrations.AlterField(
            model_name='agent',
            name='project',
            field=models.ForeignKey(default=projects.context.project_for_new_row, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AlterField(
            model_name='evaluationrun',
            name='project',
            field=models.ForeignKey(default=projects.context.project_for_new_row, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AlterField(
            model_name='sessionrun',
            name='project',
            field=models.ForeignKey(default=projects.context.project_for_new_row, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AlterField(
            model_name='agent',
            name='name',
            field=models.CharField(max_length=200),
        ),
        migrations.AddConstraint(
            model_name='agent',
            constraint=models.UniqueConstraint(fields=('project', 'name'), name='agent_unique_name_per_project'),
        ),
    ]

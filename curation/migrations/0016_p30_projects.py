"""Issue #30: the project column; every existing row moves to Default, keeping its id."""

import django.db.models.deletion
import projects.context
from django.conf import settings
from django.db import migrations, models

from projects.migration_ops import move_to_default


class Migration(migrations.Migration):
    # The UPDATE commits before the column becomes NOT NULL (PostgreSQL refuses ALTER TABLE
    # with the deferred foreign key checks of the same transaction pending).
    atomic = False

    dependencies = [
        ('curation', '0015_a30_assignment'),
        ('projects', '0002_p30_default_members'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='guidelineversion',
            name='guidelineversion_unique',
        ),
        migrations.RemoveConstraint(
            model_name='release',
            name='release_unique_version',
        ),
        migrations.AddField(
            model_name='auditevent',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AddField(
            model_name='golditem',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AddField(
            model_name='guidelineversion',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AddField(
            model_name='release',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AddField(
            model_name='reviewitem',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        move_to_default('curation', ['auditevent', 'golditem', 'guidelineversion', 'release', 'reviewitem']),
        migrations.AlterField(
            model_name='auditevent',
            name='project',
            field=models.ForeignKey(default=projects.context.project_for_new_row, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AlterField(
            model_name='golditem',
            name='project',
            field=models.ForeignKey(default=projects.context.project_for_new_row, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AlterField(
            model_name='guidelineversion',
            name='project',
            field=models.ForeignKey(default=projects.context.project_for_new_row, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AlterField(
            model_name='release',
            name='project',
            field=models.ForeignKey(default=projects.context.project_for_new_row, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AlterField(
            model_name='reviewitem',
            name='project',
            field=models.ForeignKey(default=projects.context.project_for_new_row, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AddConstraint(
            model_name='guidelineversion',
            constraint=models.UniqueConstraint(fields=('project', 'stage', 'version'), name='guidelineversion_unique'),
        ),
        migrations.AddConstraint(
            model_name='release',
            constraint=models.UniqueConstraint(fields=('project', 'name', 'version'), name='release_unique_version'),
        ),
    ]

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
        ('generation', '0010_i31a_stage_progress_name'),
        ('projects', '0002_p30_default_members'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='api',
            name='generation_api_unique_import_key',
        ),
        migrations.RemoveConstraint(
            model_name='conversation',
            name='generation_conversation_unique_import_key',
        ),
        migrations.RemoveConstraint(
            model_name='conversationgraph',
            name='generation_conversationgraph_unique_import_key',
        ),
        migrations.RemoveConstraint(
            model_name='flowgraph',
            name='generation_flowgraph_unique_import_key',
        ),
        migrations.RemoveConstraint(
            model_name='intent',
            name='generation_intent_unique_import_key',
        ),
        migrations.RemoveConstraint(
            model_name='procedure',
            name='generation_procedure_unique_import_key',
        ),
        migrations.RemoveConstraint(
            model_name='sampledpath',
            name='generation_sampledpath_unique_import_key',
        ),
        migrations.RemoveConstraint(
            model_name='test',
            name='generation_test_unique_import_key',
        ),
        migrations.AddField(
            model_name='api',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AddField(
            model_name='conversation',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AddField(
            model_name='conversationgraph',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AddField(
            model_name='flowgraph',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AddField(
            model_name='generationjob',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AddField(
            model_name='intent',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AddField(
            model_name='procedure',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AddField(
            model_name='sampledpath',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AddField(
            model_name='test',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        move_to_default('generation', ['api', 'conversation', 'conversationgraph', 'flowgraph', 'generationjob', 'intent', 'procedure', 'sampledpath', 'test']),
        migrations.AlterField(
            model_name='api',
            name='project',
            field=models.ForeignKey(default=projects.context.project_for_new_row, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AlterField(
            model_name='conversation',
            name='project',
            field=models.ForeignKey(default=projects.context.project_for_new_row, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AlterField(
            model_name='conversationgraph',
            name='project',
            field=models.ForeignKey(default=projects.context.project_for_new_row, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AlterField(
            model_name='flowgraph',
            name='project',
            field=models.ForeignKey(default=projects.context.project_for_new_row, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AlterField(
            model_name='generationjob',
            name='project',
            field=models.ForeignKey(default=projects.context.project_for_new_row, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AlterField(
            model_name='intent',
            name='project',
            field=models.ForeignKey(default=projects.context.project_for_new_row, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AlterField(
            model_name='procedure',
            name='project',
            field=models.ForeignKey(default=projects.context.project_for_new_row, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AlterField(
            model_name='sampledpath',
            name='project',
            field=models.ForeignKey(default=projects.context.project_for_new_row, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AlterField(
            model_name='test',
            name='project',
            field=models.ForeignKey(default=projects.context.project_for_new_row, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project'),
        ),
        migrations.AddConstraint(
            model_name='api',
            constraint=models.UniqueConstraint(condition=models.Q(('job__isnull', True), models.Q(('key', ''), _negated=True)), fields=('project', 'key'), name='generation_api_unique_import_key'),
        ),
        migrations.AddConstraint(
            model_name='conversation',
            constraint=models.UniqueConstraint(condition=models.Q(('job__isnull', True), models.Q(('key', ''), _negated=True)), fields=('project', 'key'), name='generation_conversation_unique_import_key'),
        ),
        migrations.AddConstraint(
            model_name='conversationgraph',
            constraint=models.UniqueConstraint(condition=models.Q(('job__isnull', True), models.Q(('key', ''), _negated=True)), fields=('project', 'key'), name='generation_conversationgraph_unique_import_key'),
        ),
        migrations.AddConstraint(
            model_name='flowgraph',
            constraint=models.UniqueConstraint(condition=models.Q(('job__isnull', True), models.Q(('key', ''), _negated=True)), fields=('project', 'key'), name='generation_flowgraph_unique_import_key'),
        ),
        migrations.AddConstraint(
            model_name='intent',
            constraint=models.UniqueConstraint(condition=models.Q(('job__isnull', True), models.Q(('key', ''), _negated=True)), fields=('project', 'key'), name='generation_intent_unique_import_key'),
        ),
        migrations.AddConstraint(
            model_name='procedure',
            constraint=models.UniqueConstraint(condition=models.Q(('job__isnull', True), models.Q(('key', ''), _negated=True)), fields=('project', 'key'), name='generation_procedure_unique_import_key'),
        ),
        migrations.AddConstraint(
            model_name='sampledpath',
            constraint=models.UniqueConstraint(condition=models.Q(('job__isnull', True), models.Q(('key', ''), _negated=True)), fields=('project', 'key'), name='generation_sampledpath_unique_import_key'),
        ),
        migrations.AddConstraint(
            model_name='test',
            constraint=models.UniqueConstraint(condition=models.Q(('job__isnull', True), models.Q(('key', ''), _negated=True)), fields=('project', 'key'), name='generation_test_unique_import_key'),
        ),
    ]

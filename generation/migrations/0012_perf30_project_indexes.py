"""Issue #30 item 6: a project's tests in id order (the API list), schema only."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('generation', '0011_p30_projects'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='test',
            index=models.Index(fields=['project', 'id'], name='test_project_id_order'),
        ),
    ]

"""Issue #30 item 6: the queue's index led by the project (schema only).

With ten projects of 5,000 items, the candidate query in the last project read the stage's open
items of the other nine through reviewitem_queue_order before reaching its own (PostgreSQL).
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('curation', '0017_p30_settings_audit'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='reviewitem',
            index=models.Index(fields=['project', 'stage', 'state', 'excluded', '-has_warnings', '-review_count', 'id'],
                               name='reviewitem_project_queue'),
        ),
    ]

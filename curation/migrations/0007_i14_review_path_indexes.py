"""Review path indexes (issue #14): claims by (annotator, expires_at) instead of (item, expires_at),
item alone and annotator alone; reviews by (annotator, created_at, id).

Schema only. Every claim-next and submit reads the annotator's active claims. Claims churn (each
verdict deletes one) and their dead index entries stay until vacuum: through (item, expires_at) or
item alone, Postgres read every annotator's entries past now, dead ones included, with their rows;
through this index it reads the annotator's own. Reads of one item's claims use the unique
(item, annotator) index, which also made the column index on item redundant.

Reviews get (annotator, created_at, id) for the annotator's latest review, which every review
page shows (undo): by annotator alone Postgres read and sorted all of the annotator's reviews.
Their column indexes on item and on annotator go (the unique (item, annotator) and this index
start with them): one index fewer to write per verdict.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('curation', '0006_i14_release_fk_unchecked'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name='review',
            index=models.Index(fields=['annotator', 'created_at', 'id'], name='review_annotator_recent'),
        ),
        migrations.AlterField(
            model_name='review',
            name='item',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='reviews', to='curation.reviewitem'),
        ),
        migrations.AlterField(
            model_name='review',
            name='annotator',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='reviews', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddIndex(
            model_name='claim',
            index=models.Index(fields=['annotator', 'expires_at'], name='claim_annotator_expires'),
        ),
        migrations.RemoveIndex(
            model_name='claim',
            name='curation_cl_item_id_c4639b_idx',
        ),
        migrations.AlterField(
            model_name='claim',
            name='item',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='claims', to='curation.reviewitem'),
        ),
        migrations.AlterField(
            model_name='claim',
            name='annotator',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='claims', to=settings.AUTH_USER_MODEL),
        ),
    ]

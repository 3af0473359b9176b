"""One release storage format (issue #29): every format 1 release is rewritten into format 2.

Format 2's reader (curation.releases.rows) already reads a row whose ``procedure_id`` is NULL as a
whole row, and a conversation record that still carries its tests as it is; what format 1 had of
its own was a CSV rendered at download time when the release had no stored CSV records (rows built
by hand, or records of the old 18 columns) and its content hash. So for each format 1 release:

* every row gets its stored CSV record, rendered now by the download's own renderer
  (CsvLineMaker over the decoded rows in download order), unless the manifest says the stored ones
  are current: the CSV download then always streams stored records;
* the rows stay whole and the records as they are, so every download keeps its bytes
  (tests/datasets/test_format1_migration.py checks them against the format 1 code's output);
* the content hash published with it (manifest, card, webhooks, portable files, baselines) stays:
  ``hash_scheme = "rows"`` says it covers the whole rows' canonical JSON, then the records, per
  batch of conversations, and release_verify recomputes it that way from the one reader.

Then the ``format`` field goes. Not reversible: format 1 has no reader any more.
"""
from django.db import migrations, models

BATCH = 2000


def rewrite_format1(apps, schema_editor):
    from curation.releases.csv_render import CSV_COLUMNS, CsvLineMaker

    Release = apps.get_model("curation", "Release")
    ReleaseTest = apps.get_model("curation", "ReleaseTest")
    db = schema_editor.connection.alias
    for release in Release.objects.using(db).filter(format=1).order_by("pk"):
        manifest = release.manifest or {}
        stored_current = bool(manifest.get("csv_lines")) and manifest.get("csv_columns", 18) == len(CSV_COLUMNS)
        if not stored_current:
            make = CsvLineMaker()
            rows = (ReleaseTest.objects.using(db).filter(release_id=release.pk)
                    .order_by("conversation_id", "position", "id").only("pk", "data", "csv_line"))
            batch = []
            for row in rows.iterator(chunk_size=BATCH):
                row.csv_line = make(row.data)
                batch.append(row)
                if len(batch) >= BATCH:
                    ReleaseTest.objects.using(db).bulk_update(batch, ["csv_line"])
                    batch = []
            ReleaseTest.objects.using(db).bulk_update(batch, ["csv_line"])
        Release.objects.using(db).filter(pk=release.pk).update(hash_scheme="rows")


class Migration(migrations.Migration):

    dependencies = [
        ('curation', '0011_i31c_corrections'),
    ]

    operations = [
        migrations.AddField(
            model_name='release',
            name='hash_scheme',
            field=models.CharField(choices=[('stored', 'Every stored value (releases frozen in format 2)'),
                                            ('rows', 'Whole rows, then records (releases frozen in format 1)')],
                                   default='stored', max_length=8),
        ),
        migrations.RunPython(rewrite_format1, elidable=False),
        migrations.RemoveField(
            model_name='release',
            name='format',
        ),
    ]

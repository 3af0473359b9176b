"""Store each release test's Hugging Face tests.jsonl line (issue #29: the HF export at ≥ 50,000 rows/s).

release_freeze now writes ``hf_line`` beside ``data`` and ``csv_line``; this fills it for the rows
frozen before, from each row's stored JSON, by the functions the download checks against
(curation.releases.hf.stored_line: a whole row gets hf_row's whole line, a slim row its line
without the procedure's values and a named context). A row that hf_row cannot render keeps an
empty line and is rendered at download, as before. Reversible: the column goes.
"""
from django.db import migrations, models

BATCH = 2000


def fill_hf_lines(apps, schema_editor):
    import json

    from curation.releases.hf import stored_line

    ReleaseTest = apps.get_model("curation", "ReleaseTest")
    db = schema_editor.connection.alias
    qs = (ReleaseTest.objects.using(db).filter(hf_line="").order_by("pk")
          .only("pk", "procedure_id", "context_len", "data"))
    last, batch = 0, []
    while True:
        rows = list(qs.filter(pk__gt=last)[:BATCH])
        if not rows:
            break
        for row in rows:
            data = row.data if isinstance(row.data, dict) else json.loads(row.data)
            try:
                row.hf_line = stored_line(data, row.procedure_id is not None, row.context_len is not None)
            except (KeyError, TypeError, AttributeError, ValueError):
                row.hf_line = ""
            if row.hf_line:
                batch.append(row)
        last = rows[-1].pk
        ReleaseTest.objects.using(db).bulk_update(batch, ["hf_line"])
        batch = []


class Migration(migrations.Migration):

    dependencies = [
        ("curation", "0013_h31c_item_corrected"),
    ]

    operations = [
        migrations.AddField(
            model_name="releasetest",
            name="hf_line",
            field=models.TextField(blank=True, default="", db_default=""),
        ),
        migrations.RunPython(fill_hf_lines, migrations.RunPython.noop, elidable=False),
    ]

"""PostgreSQL: compress frozen release rows with lz4 instead of pglz (issue #14, release speed).

A release copies ~8 KB of text per test (the self-contained JSON row and its CSV record); TOAST
compresses every value, and with pglz that was over a third of freezing 8,000 tests (measured:
COPY of 8,000 rows 1.36 s with pglz, 0.78 s with lz4). lz4 needs PostgreSQL 14+ built with it;
elsewhere (and on SQLite) this migration changes nothing. Existing values keep their compression.
"""
from django.db import migrations

COLUMNS = [("curation_releasetest", "data"), ("curation_releasetest", "csv_line"), ("curation_releaserecord", "data")]


def _set(method: str):
    def apply(apps, schema_editor):
        conn = schema_editor.connection
        if conn.vendor != "postgresql" or conn.get_database_version() < (14,):
            return
        with conn.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' "
                           "AND %s = ANY(enumvals)", [method])
            if cursor.fetchone() is None:  # built without lz4
                return
            for table, column in COLUMNS:
                cursor.execute(f'ALTER TABLE "{table}" ALTER COLUMN "{column}" SET COMPRESSION {method}')
    return apply


class Migration(migrations.Migration):
    dependencies = [("curation", "0003_i16_flags_gold_guidelines")]

    operations = [migrations.RunPython(_set("lz4"), _set("pglz"), elidable=False)]

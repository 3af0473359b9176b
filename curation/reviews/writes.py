"""Single-row writes of the review path as plain statements built once per model and column set.

A verdict writes a handful of rows (review, audit event, review meta; a claim on the next item).
Through the ORM each ``create``/``save``/``delete`` builds a query and runs its compiler (and a
delete collects related objects), a few tenths of a millisecond of Python apiece on the busiest
request of the product. Here each statement's SQL is made once; values still go through each
field's own ``get_db_prep_save`` (JSON, datetimes, booleans come out as the ORM would write them),
so rows are identical to ORM-written ones on SQLite and Postgres. No signals are sent: nothing in
the project listens to these models' signals (tests/curation/reviews/test_writes.py checks that).
"""
from __future__ import annotations

from typing import Any

from django.db import connection, models


_sql: dict[tuple, tuple[str, list]] = {}


def _qn(name: str) -> str:
    return connection.ops.quote_name(name)


def _fields(model: type[models.Model], names) -> list:
    return [model._meta.get_field(n) for n in names]


def insert(model: type[models.Model], **values: Any) -> int:
    """INSERT one row; returns its primary key."""
    key = ("insert", connection.vendor, model, tuple(values))
    built = _sql.get(key)
    if built is None:
        fields = _fields(model, values)
        cols = ", ".join(_qn(f.column) for f in fields)
        sql = (f"INSERT INTO {_qn(model._meta.db_table)} ({cols}) VALUES ({', '.join(['%s'] * len(fields))})"
               f" RETURNING {_qn(model._meta.pk.column)}")
        built = _sql[key] = (sql, fields)
    sql, fields = built
    with connection.cursor() as cursor:
        cursor.execute(sql, [f.get_db_prep_save(v, connection) for f, v in zip(fields, values.values())])
        return cursor.fetchone()[0]


def update(model: type[models.Model], pk: int, **values: Any) -> int:
    """UPDATE the row with this primary key; returns the number of rows changed (0 or 1)."""
    key = ("update", connection.vendor, model, tuple(values))
    built = _sql.get(key)
    if built is None:
        fields = _fields(model, values)
        sets = ", ".join(f"{_qn(f.column)} = %s" for f in fields)
        sql = f"UPDATE {_qn(model._meta.db_table)} SET {sets} WHERE {_qn(model._meta.pk.column)} = %s"
        built = _sql[key] = (sql, fields)
    sql, fields = built
    with connection.cursor() as cursor:
        cursor.execute(sql, [f.get_db_prep_save(v, connection) for f, v in zip(fields, values.values())] + [pk])
        return cursor.rowcount


def delete(model: type[models.Model], **where: Any) -> int:
    """DELETE the rows matching every column = value (for models no other row points at with
    CASCADE that the database would not handle itself); returns the number deleted."""
    key = ("delete", connection.vendor, model, tuple(where))
    built = _sql.get(key)
    if built is None:
        fields = _fields(model, where)
        cond = " AND ".join(f"{_qn(f.column)} = %s" for f in fields)
        built = _sql[key] = (f"DELETE FROM {_qn(model._meta.db_table)} WHERE {cond}", fields)
    sql, fields = built
    with connection.cursor() as cursor:
        cursor.execute(sql, [f.get_db_prep_value(v, connection) for f, v in zip(fields, where.values())])
        return cursor.rowcount


def upsert_claim(claim_model: type[models.Model], *, item_id: int, annotator_id: int, claimed_at, expires_at) -> None:
    """Insert the claim, or renew the annotator's own (lapsed) claim on the item: one statement
    on the (item, annotator) unique constraint, on SQLite and Postgres alike."""
    key = ("upsert", connection.vendor, claim_model)
    built = _sql.get(key)
    if built is None:
        meta = claim_model._meta
        f = {n: meta.get_field(n) for n in ("item", "annotator", "claimed_at", "expires_at")}
        sql = (f"INSERT INTO {_qn(meta.db_table)} ({', '.join(_qn(x.column) for x in f.values())})"
               f" VALUES (%s, %s, %s, %s) ON CONFLICT ({_qn(f['item'].column)}, {_qn(f['annotator'].column)})"
               f" DO UPDATE SET {_qn('claimed_at')} = excluded.{_qn('claimed_at')},"
               f" {_qn('expires_at')} = excluded.{_qn('expires_at')}")
        built = _sql[key] = (sql, f)
    sql, f = built
    params = [item_id, annotator_id, f["claimed_at"].get_db_prep_save(claimed_at, connection),
              f["expires_at"].get_db_prep_save(expires_at, connection)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)

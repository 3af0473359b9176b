"""Model instances from plain SQL, without RawQuerySet's per-query setup.

``Model.objects.raw()`` resolves its columns, builds a compiler and its converters again for every
query: on the review path's one-row lookups (the user on every request, the item, the claim) that
took longer than running the query. ``fetch`` keeps that plan per process (in the shared
``django.db.connection`` object), model and column list, converts values exactly as the ORM does (each backend's and field's converters: JSON,
datetimes, booleans on SQLite) and builds instances with ``Model.from_db``, so they behave like
ORM-loaded ones (columns not selected are deferred and load on first access).
"""
from __future__ import annotations

from typing import Any, TypeVar

from django.db import connection
from django.db.models import Model
from django.db.models.base import DEFERRED


M = TypeVar("M", bound=Model)


def _plan(model: type[Model], names: tuple[str, ...]):
    plans = connection.__dict__.setdefault("_almita_row_plans", {})
    plan = plans.get((model, names))
    if plan is None:
        fields = model._meta.concrete_fields
        position = {f.column: i for i, f in enumerate(fields)}
        slots = [position[n] for n in names]  # an unknown column is a programming error
        converters = []
        for i, name in enumerate(names):
            col = fields[position[name]].get_col(model._meta.db_table)
            fns = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
            if fns:
                converters.append((i, fns, col))
        plan = plans[(model, names)] = (slots, converters, len(fields), [f.attname for f in fields])
    return plan


def _run(sql: str, params, prepared: bool) -> tuple[list, list[str]]:
    """The rows of `sql` and its column names (no names without rows)."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
        return rows, ([col[0] for col in cursor.description] if rows else [])


def _instance(model: type[M], plan, row, names=(), deferred_if_null=frozenset()) -> M:
    """One model instance from the values of its selected columns (`row`), as the ORM loads it."""
    slots, converters, width, attnames = plan
    if converters:
        row = list(row)
        for i, fns, col in converters:
            value = row[i]
            for fn in fns:
                value = fn(value, col, connection)
            row[i] = value
    values = [DEFERRED] * width
    for slot, value in zip(slots, row):
        values[slot] = value
    if deferred_if_null:
        for slot, name, value in zip(slots, names, row):
            if value is None and name in deferred_if_null:
                values[slot] = DEFERRED
    return model.from_db(connection.alias, attnames, values)


def fetch(model: type[M], sql: str, params: list[Any] | tuple = (), *, prepared: bool = False) -> list[M]:
    """Run `sql` (selecting columns of `model`'s table) and return the rows as model instances."""
    rows, names = _run(sql, params, prepared)
    if not rows:
        return []
    plan = _plan(model, tuple(names))
    return [_instance(model, plan, row) for row in rows]


def fetch_one(model: type[M], sql: str, params: list[Any] | tuple = (), *, prepared: bool = False) -> M | None:
    found = fetch(model, sql, params, prepared=prepared)
    return found[0] if found else None


def select_columns(alias: str, model: type[Model], skip: tuple[str, ...] = (), replace: dict[str, str] | None = None) -> str:
    """`model`'s columns as `alias`.column for ``fetch_joined``, primary key first; fields named
    in `skip` are left out (deferred), those in `replace` selected as the given SQL (an expression
    named as the column: ``… AS column``)."""
    qn = connection.ops.quote_name
    pk = model._meta.pk
    cols = []
    for f in [pk] + [f for f in model._meta.concrete_fields if f is not pk and f.name not in skip]:
        expr = (replace or {}).get(f.name)
        cols.append(expr or f"{alias}.{qn(f.column)}")
    return ", ".join(cols)


def fetch_joined(parts: list[type[Model]], sql: str, params: list[Any] | tuple = (), *, prepared: bool = False,
                 deferred_if_null: frozenset[str] = frozenset()) -> list[tuple]:
    """Rows of a join as tuples of model instances, one per model in `parts`.

    `sql` selects each part's columns in turn, each part's primary key first (``SELECT a.id, …,
    b.id, …``; ``select_columns`` writes them): where the next part's primary key is, the previous
    part's columns end. A part whose primary key is NULL (an outer join that found nothing) comes
    back as None. Columns named in `deferred_if_null` that are NULL are left deferred (loaded on
    first access), so a query can send a large column only when the caller will need it.
    """
    rows, names = _run(sql, params, prepared)
    if not rows:
        return []
    bounds, start = [], 0
    for i, model in enumerate(parts):
        end = len(names) if i == len(parts) - 1 else names.index(parts[i + 1]._meta.pk.column, start + 1)
        bounds.append((model, start, end, _plan(model, tuple(names[start:end]))))
        start = end
    return [tuple(None if row[start] is None else
                  _instance(model, plan, row[start:end], names[start:end], deferred_if_null)
                  for model, start, end, plan in bounds)
            for row in rows]

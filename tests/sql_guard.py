"""Suite-wide guard (loaded with `-p` from pytest.ini): no UPDATE or DELETE may test a row's own
columns only inside a sub-select on its own table. PostgreSQL only.

Why: a queryset scoped through its owner (`projects.scoping.owner_scoped_manager`, a JOIN to the
owner's project) is written by Django as

    UPDATE t SET … WHERE t.id IN (SELECT U0.id FROM t U0 INNER JOIN owner U1 … WHERE U0.state = %s …)

Under READ COMMITTED, an UPDATE (or DELETE) that waited for another transaction's row lock
re-checks its outer WHERE against the new row version, never the sub-select, which read the row
as it was: a compare-and-set on `state`, `active`, `read_at`… succeeds twice (two evaluation lanes
claimed one test). Conditions on the primary key are exempt (it never changes). The safe shapes
keep the row's conditions in the outer WHERE (`projects.scoping.rows_to_write`).

Every statement on every connection and thread (a live server's too) goes through
`CursorWrapper._execute_with_wrappers`, patched here; an offending statement is recorded with the
stack that ran it and fails the test at the end of its call (or teardown). A statement a test
module itself issues (the innermost frame of this checkout is under tests/: set-up, a race's
lock holder) is not the code under test and passes. `ALMITA_SQL_GUARD=off` turns the guard off.
"""
from __future__ import annotations

import os
import re
import threading
import traceback
from contextlib import contextmanager

import pytest

_QUOTED = r'"(?:[^"]|"")+"'
_HEAD = re.compile(r'\s*(?:UPDATE|DELETE\s+FROM)\s+(' + _QUOTED + r'|\w+)', re.I)
_FROM_ITEM = re.compile(r'\b(?:FROM|JOIN)\s+(' + _QUOTED + r'|\w+)(?:\s+(?:AS\s+)?(?!(?:ON|WHERE|INNER|LEFT|RIGHT|'
                        r'FULL|CROSS|JOIN|GROUP|ORDER|LIMIT|USING|FOR)\b)(' + _QUOTED + r'|\w+))?', re.I)
_WHERE = re.compile(r'\bWHERE\b', re.I)
_CLAUSE_END = re.compile(r'\b(?:GROUP\s+BY|ORDER\s+BY|LIMIT|OFFSET|FOR\s+UPDATE|RETURNING|HAVING)\b', re.I)

_SELF = os.path.abspath(__file__)
_TESTS = os.path.dirname(_SELF) + os.sep
_REPO = os.path.dirname(_TESTS.rstrip(os.sep)) + os.sep
_lock = threading.Lock()
_found: list[str] = []
_local = threading.local()
_pk_columns: dict[str, str] = {}


def _unquote(name: str) -> str:
    return name[1:-1].replace('""', '"') if name.startswith('"') else name.lower()


def _mask(sql: str) -> tuple[str, list[tuple[int, int]]]:
    """`sql` with string literals blanked and every parenthesised group at depth ≥ 1 blanked too,
    and the (start, end) of each top-level group (end exclusive, parentheses included)."""
    out = list(sql)
    groups: list[tuple[int, int]] = []
    depth, start, quote = 0, 0, ""
    for i, ch in enumerate(sql):
        if quote:
            if ch == quote:
                quote = ""
            if depth or quote == "'" or ch == "'":
                out[i] = " "
            continue
        if ch in "'\"":
            quote = ch
            if depth or ch == "'":
                out[i] = " "
        elif ch == "(":
            if depth == 0:
                start = i
            depth += 1
            out[i] = " "
        elif ch == ")" and depth:
            depth -= 1
            out[i] = " "
            if depth == 0:
                groups.append((start, i + 1))
        elif depth:
            out[i] = " "
    return "".join(out), groups


def _pk_of(table: str) -> str:
    if not _pk_columns:
        from django.apps import apps

        for model in apps.get_models(include_auto_created=True):
            _pk_columns[model._meta.db_table] = model._meta.pk.column
    return _pk_columns.get(table, "id")


def _own_conditions(select: str, table: str) -> list[str]:
    """Columns of `table` other than its key that `select`'s WHERE (nested parts included) tests
    through an alias `select` itself gives `table`; then the same for every sub-select inside."""
    masked, groups = _mask(select)
    aliases = {_unquote(alias or name) for name, alias in _FROM_ITEM.findall(masked) if _unquote(name) == table}
    found: list[str] = []
    where = _WHERE.search(masked)
    if aliases and where:
        end = _CLAUSE_END.search(masked, where.end())
        text = select[where.end(): end.start() if end else len(select)]
        pk = _pk_of(table)
        for alias in aliases:
            ref = re.escape(f'"{alias}"') + "|" + (re.escape(alias) if re.fullmatch(r"\w+", alias) else "(?!)")
            for quoted, bare in re.findall(r'(?<![\w"])(?:' + ref + r')\.(?:"((?:[^"]|"")+)"|(\w+))', text, re.I):
                col = quoted or bare.lower()
                if col != pk and f"{alias}.{col}" not in found:
                    found.append(f"{alias}.{col}")
    for start, end in groups:
        inner = select[start + 1:end - 1].strip()
        if re.match(r"SELECT\b", inner, re.I):
            found += _own_conditions(inner, table)
    return found


def offending(sql: str) -> str | None:
    """Why `sql` is an UPDATE/DELETE of the unsafe shape, or None."""
    head = _HEAD.match(sql)
    if not head:
        return None
    table = _unquote(head.group(1))
    masked, groups = _mask(sql)
    where = _WHERE.search(masked, head.end())
    if not where:
        return None
    cols: list[str] = []
    for start, end in groups:
        inner = sql[start + 1:end - 1].strip()
        if start > where.start() and re.match(r"SELECT\b", inner, re.I):
            cols += _own_conditions(inner, table)
    if not cols:
        return None
    return (f"{head.group(0).split()[0].upper()} of {table} tests {', '.join(cols)} only inside a sub-select on the "
            "same table: PostgreSQL does not re-check those after waiting for a row lock (use "
            "projects.scoping.rows_to_write, or lock the owner row first)")


@contextmanager
def unsafe_statements_allowed():
    """For a test that writes the unsafe shape on purpose (this thread only)."""
    _local.allowed = True
    try:
        yield
    finally:
        _local.allowed = False


def _record(sql: str) -> None:
    if getattr(_local, "allowed", False):
        return
    why = offending(sql)
    if why is None:
        return
    frames = [f for f in traceback.extract_stack()[:-1] if f.filename.startswith(_REPO)
              and "/.venv/" not in f.filename and f.filename != _SELF]
    if frames and frames[-1].filename.startswith(_TESTS):
        return  # a test's own set-up or stand-in writer (a race's lock holder), not the code under test
    where = "".join(traceback.format_list(frames[-6:]))
    with _lock:
        _found.append(f"{why}\n  SQL: {sql}\n  from:\n{where}")


def _install() -> None:
    from django.db.backends.utils import CursorWrapper

    original = CursorWrapper._execute_with_wrappers
    if getattr(original, "_almita_guard", False):
        return

    def _execute_with_wrappers(self, sql, params, many, executor):
        if self.db.vendor == "postgresql" and isinstance(sql, str):
            _record(sql)
        return original(self, sql, params, many, executor)

    _execute_with_wrappers._almita_guard = True
    CursorWrapper._execute_with_wrappers = _execute_with_wrappers


def _take() -> list[str]:
    with _lock:
        found = list(_found)
        _found.clear()
    return found


def _enabled() -> bool:
    return os.environ.get("ALMITA_SQL_GUARD", "on") != "off"


def pytest_configure(config) -> None:
    if _enabled():
        _install()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    _take()  # what an earlier test's threads did after it ended is not this test's
    return (yield)


def _check(phase: str) -> None:
    found = _take()
    if found:
        raise AssertionError(f"unsafe compare-and-set statement(s) ({phase}):\n" + "\n".join(found))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    try:
        return (yield)
    finally:
        _check("setup or call")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item):
    try:
        return (yield)
    finally:
        _check("teardown")

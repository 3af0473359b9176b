"""Server-side prepared statements for the review path's fixed SQL on PostgreSQL.

Postgres plans every statement it receives as text. For the review path's short statements the
plan costs more than the run: the annotator's held item (a two-table join) took about 0.35 ms
per call planned afresh and 0.03 ms prepared (measured in one run on this machine; a primary-key
read 37 vs 32 µs). psycopg2 sends text only, so ``execute`` prepares each statement once per
database session (``PREPARE almita_<n> AS …`` with ``$1…$n``) and then sends
``EXECUTE almita_<n>(…)`` with the same parameters, adapted by psycopg2 as before.

Only statements whose best plan does not depend on the parameter values are sent through here
(primary-key reads, one annotator's claims, inserts and updates by key, and claim-next's
candidate query, a walk of the queue index: planning it took ~1 ms, running it ~0.1 ms). With it
prepared, bench/scale.py at 50,000 items measured claim-next at 2.0-2.7 ms median, 4.7 ms p95 at
most, in every stage.

* On any other database, with ``DB_PREPARED_STATEMENTS=0``, or while Django records queries
  (DEBUG, or a test's CaptureQueriesContext: the recorded SQL stays the statement itself),
  the statement runs as before.
* Inside a transaction the PREPARE runs under a savepoint, so a statement Postgres cannot prepare
  (it could not infer a parameter's type, say) leaves the transaction intact; it is then never
  prepared again on that session.
* A statement that fails while prepared (e.g. "cached plan must not change result type" after a
  migration) makes the session start over with new names; the error propagates as before.
"""
from __future__ import annotations

import itertools
import os
from typing import Any

MAX_PER_SESSION = 200
_generation = itertools.count(1)


def _enabled() -> bool:
    return os.environ.get("DB_PREPARED_STATEMENTS", "1") != "0"


def _session(db) -> tuple:
    """(raw connection, {statement: prepared name, or "" when it cannot be prepared}, name prefix)
    for the database session `db` has now; a new session (reconnect) starts a new state."""
    raw = db.connection
    state = db.__dict__.get("_almita_prepared")
    if state is None or state[0] is not raw:
        state = db.__dict__["_almita_prepared"] = (raw, {}, f"almita_{next(_generation)}_")
    return state


def execute(cursor, sql: str, params: list[Any] | tuple = ()) -> None:
    """``cursor.execute(sql, params)``, through a prepared statement where that applies."""
    db = cursor.db
    if db.vendor != "postgresql" or db.queries_logged or "%%" in sql or "%(" in sql or not _enabled():
        cursor.execute(sql, params)
        return
    _raw, names, prefix = _session(db)
    name = names.get(sql)
    if name is None:
        if len(names) >= MAX_PER_SESSION:
            cursor.execute(sql, params)
            return
        name = names[sql] = _prepare(db, f"{prefix}{len(names)}", sql)
    if not name:
        cursor.execute(sql, params)
        return
    try:
        cursor.execute(f"EXECUTE {name}({', '.join(['%s'] * len(params))})" if params else f"EXECUTE {name}", params)
    except Exception:
        db.__dict__.pop("_almita_prepared", None)  # start over with new names on the next statement
        raise


def _prepare(db, name: str, sql: str) -> str:
    parts = sql.split("%s")
    text = "".join(part + (f"${i}" if i < len(parts) else "") for i, part in enumerate(parts, start=1))
    with db.connection.cursor() as raw:  # psycopg2's own cursor: no %-interpolation, not recorded
        savepoint = db.in_atomic_block
        try:
            if savepoint:
                raw.execute("SAVEPOINT almita_prepare")
            raw.execute(f"PREPARE {name} AS {text}")
            if savepoint:
                raw.execute("RELEASE SAVEPOINT almita_prepare")
            return name
        except Exception:
            if savepoint:
                raw.execute("ROLLBACK TO SAVEPOINT almita_prepare")
                raw.execute("RELEASE SAVEPOINT almita_prepare")
            return ""

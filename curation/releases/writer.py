"""Bulk writes of pre-encoded release rows, overlapped with building the next batch.

release_freeze builds rows in Python while the database stores the previous batch: each flush
hands its rows to a background thread that writes them on the transaction's own connection
(PostgreSQL: COPY … FROM STDIN; SQLite: one executemany of a prepared INSERT), and psycopg2 and
sqlite3 release the GIL while the database works. The connection is never used by two threads at
once: every source read (Reader) first waits for the write in flight, and each flush first reads
the next chunk of every source, so Python has rows to work on while the write runs.

These statements go through the database driver, not Django's cursor, so Django's query log
does not list them (``statements`` counts them).
"""
from __future__ import annotations

import io
import threading
from collections import deque
from collections.abc import Iterator
from typing import Any

from django.db import connection, connections


class Table:
    """Pending rows of one table: tuples of values, or (PostgreSQL) COPY text lines."""

    def __init__(self, writer: Writer, model, columns: list[str]) -> None:
        self.writer = writer
        quote = connection.ops.quote_name
        self.table = quote(model._meta.db_table)
        self.names = ", ".join(quote(c) for c in columns)
        self.pending: list = []

    def write(self, cursor, rows: list) -> None:
        if self.writer.pg:
            cursor.copy_expert(f"COPY {self.table} ({self.names}) FROM STDIN", io.StringIO("".join(rows)))
        else:
            marks = ", ".join("?" for _ in self.names.split(", "))
            cursor.executemany(f"INSERT INTO {self.table} ({self.names}) VALUES ({marks})", rows)


def copy_text(value: str) -> str:
    """A text field of COPY's text format."""
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def copy_json(value: str) -> str:
    """Canonical JSON text as a COPY field: JSON escapes every control character inside its strings,
    so only backslashes need doubling."""
    return value.replace("\\", "\\\\")


def copy_line(values: tuple) -> str:
    return "\t".join(copy_text(v) if v.__class__ is str else str(v) for v in values) + "\n"


class Reader:
    """A query's rows, fetched in chunks, never while a write is in flight."""

    def __init__(self, writer: Writer, qs, chunk: int) -> None:
        self.writer = writer
        self.chunk = chunk
        sql, params = qs.query.sql_with_params()
        self.cursor = connections[qs.db].chunked_cursor()
        self.cursor.execute(sql, params)
        self.buffer: deque = deque()
        self.done = False
        writer.readers.append(self)

    def _fetch(self) -> None:
        rows = self.cursor.fetchmany(self.chunk)
        if rows:
            self.buffer.extend(rows)
        else:
            self.done = True
            self.cursor.close()

    def prefetch(self) -> None:
        if not self.done and len(self.buffer) < self.chunk:
            self._fetch()

    def __iter__(self) -> Iterator[tuple]:
        return self

    def __next__(self) -> tuple:
        while not self.buffer:
            if self.done:
                raise StopIteration
            self.writer.wait()
            self._fetch()
        return self.buffer.popleft()


class Writer:
    def __init__(self, *, background: bool = True) -> None:
        connection.ensure_connection()
        self.raw = connection.connection
        self.pg = connection.vendor == "postgresql"
        self.background = background
        self.tables: list[Table] = []
        self.readers: list[Reader] = []
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.statements = 0

    def table(self, model, columns: list[str]) -> Table:
        t = Table(self, model, columns)
        self.tables.append(t)
        return t

    def reader(self, qs, chunk: int = 2000) -> Reader:
        return Reader(self, qs, chunk)

    def wait(self) -> None:
        if self.thread is not None:
            self.thread.join()
            self.thread = None
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def flush(self) -> None:
        """Write every table's pending rows (in the order the tables were made), in the background."""
        self.wait()
        batches = [(t, t.pending) for t in self.tables if t.pending]
        if not batches:
            return
        for t in self.tables:
            t.pending = []
        for r in self.readers:
            r.prefetch()
        self.statements += len(batches)
        if self.background:
            self.thread = threading.Thread(target=self._write, args=(batches,), name="release-writer", daemon=True)
            self.thread.start()
        else:
            self._write(batches)
            self.wait()

    def _write(self, batches: list[tuple[Table, list[Any]]]) -> None:
        try:
            cursor = self.raw.cursor()
            try:
                for t, rows in batches:
                    t.write(cursor, rows)
            finally:
                cursor.close()
        except BaseException as exc:  # re-raised in the main thread by wait()
            self.error = exc

    def close(self) -> None:
        self.flush()
        self.wait()
        for r in self.readers:
            if not r.done:
                r.cursor.close()

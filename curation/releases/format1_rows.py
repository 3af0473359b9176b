"""Reading format 1 release rows (whole rows, releases frozen before storage format 2) cheaply.

The CSV and Hugging Face writers need the procedure and its APIs once per procedure, not once per
test, and a conversation's contexts are prefixes of each other; these readers exploit both so a
whole row costs far less than decoding its ~4 KB of JSON. Format 2 rows go to
curation.releases.rows. Split out of curation.releases.exports, which re-exports release_rows_slim.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.db import connections
from django.db.models import Func, TextField
from django.db.models.functions import Cast

from curation.models import Release
from curation.releases.rows import plain_rows, release_test_rows

ORDER = ("conversation_id", "position", "id")


class _SlimRow(Func):
    """A test row's JSON text without the procedure text and the APIs (and, on PostgreSQL, the context).

    The CSV and Hugging Face writers need the procedure and its APIs once per procedure, not once
    per test, so the database drops them; they come back from the release's frozen procedure
    records. On PostgreSQL the context comes as its own column (_ContextText), so that a context
    extending the previous row's is decoded from its new messages only (see release_rows_slim);
    SQLite would parse every row's JSON a second time for it, which costs more than it saves
    (measured: 14.9 µs a row for both columns against 9.3 µs for the one).
    """

    output_field = TextField()
    template = "CAST(%(expressions)s AS TEXT)"

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection,
                           template="json_remove(%(expressions)s, '$.apis', '$.procedure.text')", **extra)

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection,
                           template="(((%(expressions)s #- '{procedure,text}') - 'apis') - 'context')::text", **extra)


class _ContextText(Func):
    """PostgreSQL: the row's context as jsonb renders it; elsewhere NULL (the context stays in the row)."""

    output_field = TextField()
    template = "NULL"

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="(%(expressions)s -> 'context')::text", **extra)


def release_rows_slim(release: Release, chunk_size: int = 2000) -> Iterator[dict[str, Any]]:
    """Frozen test rows, decoded, equal to release_rows() but much cheaper per row (format 1 rows;
    format 2 rows are small already and get their procedure's values from the records).

    Rows come in conversation order, so a context is usually the previous one plus a few
    messages. When the previous context's text (without its closing bracket, followed by a
    comma) starts this one's, the parser is in the same state at that point, so only the rest
    is decoded and appended: every message is decoded once per conversation, not once per test.
    """
    if release.format == 2:
        yield from (row for *_ids, row in release_test_rows(release, chunk_size=chunk_size))
        return
    sqlite = connections[release._state.db or "default"].vendor == "sqlite"
    read = Format1Reader(release, sqlite)
    for text, ctx_text in plain_rows(format1_texts(release, sqlite), chunk_size):
        yield read(text, ctx_text)


def format1_texts(release: Release, sqlite: bool):
    """(row text, context text) in download order: SQLite hands over the stored text as it is
    (canonical rows are cut in Python); PostgreSQL drops the procedure text and the APIs and gives
    the context as its own column."""
    if sqlite:
        qs = release.entries.order_by(*ORDER).annotate(slim=Cast("data", TextField()), ctx=_ContextText("data"))
    else:
        qs = release.entries.order_by(*ORDER).annotate(slim=_SlimRow("data"), ctx=_ContextText("data"))
    return qs.values_list("slim", "ctx")


class Format1Reader:
    """Decodes one format 1 row text after another (release_rows_slim's rows); the state carried
    from row to row (the previous context and APIs) only saves work, every row equals its decode."""

    def __init__(self, release: Release, sqlite: bool) -> None:
        self.release, self.sqlite = release, sqlite
        self.procedures: dict[int, dict[str, Any]] = {}
        self.prev_text, self.prev_ctx = "", []
        self.apis_text, self.apis = "", None

    def __call__(self, text: str, ctx_text: str | None) -> dict[str, Any]:
        loads = json.loads
        if self.sqlite and text.startswith(_LEADING_APIS):
            # A canonical row (release_create's format 1): "apis" first, the same text as the previous
            # row's most of the time, then "context".
            n = len(self.apis_text)
            if n and text.startswith(self.apis_text, 8) and text[8 + n] == ",":
                i = 8 + n
            else:
                self.apis, i = _SCAN(text, 8)
                self.apis_text = text[8:i]
            apis = self.apis
            text = "{" + text[i + 1:]
        else:
            apis = None
        if ctx_text is None and text.startswith(_LEADING_CONTEXT):
            d, self.prev_text, self.prev_ctx = _leading_context_row(text, self.prev_text, self.prev_ctx)
        else:
            d = loads(text)
        if apis is not None:
            d["apis"] = apis
        if ctx_text is not None:
            prev_text, prev_ctx = self.prev_text, self.prev_ctx
            n = len(prev_text)
            if n > 2 and len(ctx_text) > n and ctx_text[n - 1] == "," and ctx_text.startswith(prev_text[:-1]):
                ctx = prev_ctx + loads("[" + ctx_text[n:])
            elif ctx_text == prev_text:
                ctx = prev_ctx[:]
            else:
                ctx = loads(ctx_text)
            d["context"] = ctx
            self.prev_text, self.prev_ctx = ctx_text, ctx
        proc = d["procedure"]
        if "apis" in d and "text" in proc:  # a database without JSON functions: already whole
            return d
        pid = proc["id"]
        procedures = self.procedures
        rec = procedures.get(pid)
        if rec is None:
            if len(procedures) > 20_000:
                procedures.clear()
            rec = procedures[pid] = self.release.records.get(kind="procedure", object_id=pid).data
        proc["text"] = rec["text"]
        d["apis"] = rec["apis"]
        return d


_LEADING_CONTEXT = '{"context":['
_LEADING_APIS = '{"apis":['
_SCAN = json.JSONDecoder().scan_once


def _leading_context_row(text: str, prev_text: str, prev_ctx: list) -> tuple[dict[str, Any], str, list]:
    """A minified row whose first key is "context", decoded with the context-prefix rule of
    release_rows_slim applied to the row's own text: (row, its context's text, its context)."""
    start = len(_LEADING_CONTEXT) - 1
    ctx, end = context_at(text, start, prev_text, prev_ctx)
    d = _rest(text, end) if text[end] == "," else {}
    d["context"] = ctx
    return d, text[start:end], ctx


def context_at(text: str, start: int, prev_text: str, prev_ctx: list) -> tuple[list, int]:
    """The minified JSON array at text[start] ("["), decoded with the context-prefix rule: when the
    previous context's text (without its "]", then a comma) starts it, only the new items are
    decoded and appended to a copy of the previous list. (The list, the index after its "]".)"""
    n = len(prev_text)
    if n > 2 and text.startswith(prev_text[:-1], start) and text[start + n - 1] == ",":
        ctx, i = prev_ctx[:], start + n
        while True:
            item, i = _SCAN(text, i)
            ctx.append(item)
            if text[i] == "]":
                return ctx, i + 1
            i += 1  # the comma (minified JSON: nothing else between items)
    if n >= 2 and text.startswith(prev_text, start) and text[start + n] in ",}":
        return prev_ctx[:], start + n
    return _SCAN(text, start)


_PROCEDURES: dict[str, Any] = {}


def _rest(text: str, end: int) -> dict[str, Any]:
    """The keys after the context. In canonical order "procedure" comes last but "test_id"; its
    value (id, text, title: no nested object) is decoded once per procedure text, not per row.
    (The raw ,"procedure":{ cannot occur inside a string, and the last one is the top-level key.)"""
    k = text.rfind(',"test_id":')
    p = text.rfind(',"procedure":{', end, k) if k > 0 else -1
    # Only the top-level pair: "test_id" and a number end the text, the slice is one object.
    if p < 0 or text[-1] != "}" or not text[k + 11:-1].isdigit():
        return json.loads("{" + text[end + 1:])
    ptext = text[p + 13:k]
    proc = _PROCEDURES.get(ptext)
    if proc is None:
        try:
            proc = json.loads(ptext)
        except ValueError:
            return json.loads("{" + text[end + 1:])
        if len(_PROCEDURES) > 1000:
            _PROCEDURES.clear()
        _PROCEDURES[ptext] = proc
    d = json.loads("{" + (text[end:p] + text[k:])[1:])
    d["procedure"] = dict(proc)
    return d

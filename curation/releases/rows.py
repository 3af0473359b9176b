"""Reading a release's test rows: the one place that knows how they are stored.

A row whose ``procedure_id`` is NULL is whole: its ``data`` the whole test row and its
``csv_line`` the whole CSV record (releases frozen before the slim rows, rewritten by migration
0010, and rows built by hand). A row whose ``procedure_id`` is set is *slim* (release_create): its
``data`` lacks the three values that are the same for every test of a procedure ("apis",
"intent", "procedure") and its ``csv_line`` the six cells built from them (intent_id … apis). The
release's "procedure" and "intent" records (frozen once per release and covered by the content
hash) hold them; this module splices them back, so every output is the text a whole row gives.

A slim row whose ``context_len`` is set also lacks its context (in ``data`` and in ``csv_line``):
it is the first ``context_len`` messages of the release's record of the conversation (Messages,
read beside the rows in conversation order). Every output is the text a whole row gives:

* JSON text, as the database renders the whole row (SQLite: the canonical text stored;
  PostgreSQL: jsonb's rendering, key order by length, ", " and ": " separators). On SQLite the
  slim text is cut at its top-level ``,"job_id":`` and ``,"test_id":`` keys (found from the end:
  the values after them are numbers and lists of strings, as release_freeze explains); on
  PostgreSQL the database renders the keys around "context" and "procedure" as separate texts.
* CSV records: the stored line with the procedure's cells (and the context's) put back after its
  third comma (the first three cells are integers).
* decoded rows (dicts) for evaluation, the Hugging Face export and the preview
  (release_test_rows, release_test_row): the slim row with the shared values added (shared
  between rows: read them, do not change them).
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.db import connection, connections

from curation.models import Release
from curation.releases.csv_render import _ENCODE, _cell

PIECE_KEYS = ("apis", "intent", "procedure")
# jsonb orders keys by length, then bytes: these slim keys come before "procedure", the rest after.
PG_BEFORE = ("job_id", "context", "path_id", "test_id", "expected", "position")
PG_AFTER = ("noise_kinds", "flowgraph_id", "path_node_ids", "conversation_id", "expected_action",
            "conversation_mode", "conversation_graph_id")
ORDER = ("conversation_id", "position", "id")


def release_of(release: Release | int) -> Release:
    return release if isinstance(release, Release) else Release.objects.get(pk=release)


class Pieces:
    """The per-procedure values of a release, read from its records once (one query each way)."""

    def __init__(self, release: Release, only: int | None = None) -> None:
        self.release = release
        self.only = only  # one procedure's values only (one row's reader)
        self._values: dict[int, tuple[dict, dict, list]] | None = None
        self._canonical: dict[int, tuple[str, str, str]] = {}
        self._jsonb: dict[int, tuple[str, str, str]] | None = None
        self._middle: dict[int, str] = {}

    def values(self, pid: int) -> tuple[dict, dict, list]:
        """(intent, procedure, apis) as a row holds them."""
        if self._values is None:
            intents, procs = {}, {}
            qs = self.release.records.filter(kind__in=("intent", "procedure"))
            if self.only is not None:
                qs = self.release.records.filter(kind="procedure", object_id=self.only)
            for kind, oid, data in qs.values_list("kind", "object_id", "data"):
                (intents if kind == "intent" else procs)[oid] = data
            if self.only is not None and procs:
                iid = int(str(procs[self.only].get("intent", "")).rpartition("-")[2] or 0)
                intents = dict(self.release.records.filter(kind="intent", object_id=iid).values_list("object_id", "data"))
            self._values = {}
            for oid, rec in procs.items():
                iid = int(str(rec.get("intent", "")).rpartition("-")[2] or 0)
                irec = intents.get(iid, {})
                self._values[oid] = (
                    {"id": iid, "client": irec.get("client"), "issue": irec.get("issue"), "name": irec.get("name")},
                    {"id": oid, "title": rec.get("title"), "text": rec.get("text")}, rec.get("apis"))
        try:
            return self._values[pid]
        except KeyError:
            raise ValueError(f"{self.release}: no frozen procedure record {pid} for a slim test row") from None

    def canonical(self, pid: int) -> tuple[str, str, str]:
        """(apis, intent, procedure) as canonical JSON text."""
        got = self._canonical.get(pid)
        if got is None:
            intent, proc, apis = self.values(pid)
            got = self._canonical[pid] = (_ENCODE(apis), _ENCODE(intent), _ENCODE(proc))
        return got

    def jsonb(self, pid: int) -> tuple[str, str, str]:
        """(apis, intent, procedure) as PostgreSQL renders jsonb, built by the database itself."""
        if self._jsonb is None:
            self._jsonb = {}
            with connection.cursor() as cursor:
                cursor.execute(_PG_PIECES_SQL, [self.release.pk] * 2)
                for oid, apis, intent, proc in cursor.fetchall():
                    self._jsonb[oid] = (apis, intent, proc)
        try:
            return self._jsonb[pid]
        except KeyError:
            raise ValueError(f"{self.release}: no frozen procedure record {pid} for a slim test row") from None

    def middle(self, pid: int) -> str:
        """The CSV cells intent_id, intent, client, procedure_id, procedure, apis (as CsvLineMaker)."""
        got = self._middle.get(pid)
        if got is None:
            intent, proc, apis = self.values(pid)
            got = self._middle[pid] = ",".join((
                _cell(intent["id"]), _cell(intent["name"]), _cell(intent["client"]), _cell(proc["id"]),
                _cell(proc["text"]), _cell(_ENCODE(apis))))
        return got


_PG_PIECES_SQL = """
SELECT p.object_id, (p.data -> 'apis')::text,
       jsonb_build_object('id', i.object_id, 'client', i.data -> 'client', 'issue', i.data -> 'issue',
                          'name', i.data -> 'name')::text,
       jsonb_build_object('id', p.object_id, 'title', p.data -> 'title', 'text', p.data -> 'text')::text
FROM curation_releaserecord p
LEFT JOIN curation_releaserecord i ON i.release_id = %s AND i.kind = 'intent'
     AND 'intent-' || i.object_id::text = p.data ->> 'intent'
WHERE p.release_id = %s AND p.kind = 'procedure'
"""


_CANONICAL_RECORD = '{"id":"conversation-'
_SCAN = json.JSONDecoder().scan_once


def _canonical_items(text: str) -> list[str]:
    """The texts of a canonical conversation record's messages, sliced from it (SQLite keeps the
    canonical text release_freeze wrote, and release_verify hashes that very text): "id" and
    "kind" come first and are plain strings, so the first ,"messages":[ is the key."""
    i = text.find(',"messages":[') + 13
    items = []
    if i == 12:
        return items
    while text[i] != "]":
        j = _SCAN(text, i)[1]
        items.append(text[i:j])
        i = j + 1 if text[j] == "," else j
    return items


def splice_text(text: str, pieces: tuple[str, str, str], ctx: str | None = None) -> str:
    """SQLite: a slim row's canonical text with the procedure's canonical pieces (and the context,
    when the row names it by its length) put back."""
    apis, intent, proc = pieces
    k = text.rfind(',"test_id":')
    j = text.rfind(',"job_id":', 0, k)
    if ctx is None:
        return f'{{"apis":{apis},{text[1:j]},"intent":{intent}{text[j:k]},"procedure":{proc}{text[k:]}'
    return f'{{"apis":{apis},"context":{ctx},{text[1:j]},"intent":{intent}{text[j:k]},"procedure":{proc}{text[k:]}'


def splice_jsonb(job: str, ctx: str, mid: str, after: str, pieces: tuple[str, str, str]) -> str:
    """PostgreSQL: the slim row's parts (as jsonb renders them) around the procedure's pieces."""
    apis, intent, proc = pieces
    return (f'{{"apis": {apis}, "intent": {intent}, "job_id": {job}, "context": {ctx}, {mid[1:-1]}, '
            f'"procedure": {proc}, {after[1:]}')


def splice_csv(line: str, middle: str, ctx_cell: str | None = None) -> str:
    """A slim CSV record with the procedure's cells (and the context's) put back after its three
    integer cells."""
    i = line.find(",", line.find(",", line.find(",") + 1) + 1) + 1
    if ctx_cell is None:
        return f"{line[:i]}{middle},{line[i:]}"
    return f"{line[:i]}{middle},{ctx_cell},{line[i:]}"


def csv_cell(ctx_text: str) -> str:
    """A context's CSV cell from its canonical JSON (CsvLineMaker's rule: no formula can start with
    "[", quotes only when it holds a quote or a comma)."""
    escaped = ctx_text.replace('"', '""')
    return escaped if len(escaped) == len(ctx_text) and "," not in ctx_text else f'"{escaped}"'


class Messages:
    """The messages of the release's conversation records, read alongside rows in conversation
    order: kind "canonical" (each message's canonical JSON), "jsonb" (as PostgreSQL renders each)
    or "values" (decoded)."""

    def __init__(self, release: Release, kind: str, conversation_ids=None) -> None:
        self.kind = kind
        qs = release.records.filter(kind="conversation")
        if conversation_ids is not None:
            qs = qs.filter(object_id__in=conversation_ids)
        qs = qs.order_by("object_id")
        if kind == "jsonb":  # (every conversation of the release)
            table = connection.ops.quote_name(qs.model._meta.db_table)
            self.rows = raw_rows(f"SELECT ARRAY(SELECT e::text FROM jsonb_array_elements(data -> 'messages') e), "
                                 f"object_id FROM {table} WHERE release_id = %s AND kind = 'conversation' "
                                 "ORDER BY object_id", [release.pk])
        else:
            self.rows = plain_rows(qs.values_list("data", "object_id"))
        self.cid: int | None = None
        self.ahead: tuple | None = None
        self.items: list = []
        self.texts: dict[int, str] = {}

    def _advance(self, cid: int) -> None:
        while True:
            if self.ahead is None:
                self.ahead = next(self.rows, None)
            if self.ahead is None or self.ahead[1] > cid:
                break
            (value, oid), self.ahead = self.ahead, None
            if oid < cid:
                continue
            if self.kind == "jsonb":
                self.items = value or []
            elif self.kind == "canonical" and isinstance(value, str) and value.startswith(_CANONICAL_RECORD):
                self.items = _canonical_items(value)
            else:
                data = json.loads(value) if isinstance(value, (str, bytes)) else value
                messages = data.get("messages") or []
                self.items = [_ENCODE(m) for m in messages] if self.kind == "canonical" else messages
            self.cid, self.texts = cid, {}
            return
        raise ValueError(f"no frozen record of conversation {cid} for a test that names its messages")

    def prefix(self, cid: int, k: int):
        """The first k messages: JSON text (canonical or jsonb's) or a list of values."""
        if cid != self.cid:
            self._advance(cid)
        if self.kind == "values":
            return self.items[:k]
        got = self.texts.get(k)
        if got is None:
            sep = ", " if self.kind == "jsonb" else ","
            got = self.texts[k] = "[" + sep.join(self.items[:k]) + "]"
        return got


def plain_rows(qs, chunk_size: int = 2000) -> Iterator[tuple]:
    """The queryset's rows as the database cursor returns them (text columns need no converter),
    without the ORM's per-row iterator; a server-side cursor on PostgreSQL, as .iterator() uses
    (Django declares it WITH HOLD outside a transaction)."""
    sql, params = qs.query.sql_with_params()
    yield from raw_rows(sql, params, chunk_size, using=qs.db)


def raw_rows(sql: str, params, chunk_size: int = 2000, using: str = "default") -> Iterator[tuple]:
    with connections[using].chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(chunk_size):
            yield from rows


def _table() -> str:
    from curation.models import ReleaseTest

    return connection.ops.quote_name(ReleaseTest._meta.db_table)


_ROWS = "FROM {table} WHERE release_id = %s ORDER BY conversation_id, position, id"


def json_texts(release: Release, chunk_size: int = 2000) -> Iterator[str]:
    """Every test row as the JSON text the database renders for the whole row, in download order."""
    pieces = Pieces(release)
    if connection.vendor == "postgresql":
        messages = Messages(release, "jsonb")
        slim = "procedure_id IS NOT NULL"
        sql = (f"SELECT procedure_id, context_len, conversation_id, CASE WHEN {slim} THEN NULL ELSE data::text END, "
               f"CASE WHEN {slim} THEN (data -> 'job_id')::text END, "
               f"CASE WHEN {slim} AND context_len IS NULL THEN (data -> 'context')::text END, "
               f"CASE WHEN {slim} THEN (data - %s::text[])::text END, CASE WHEN {slim} THEN (data - %s::text[])::text END "
               + _ROWS.format(table=_table()))
        params = [["job_id", "context", *PG_AFTER], list(PG_BEFORE), release.pk]
        for pid, k, cid, whole_text, job, ctx, mid, after in raw_rows(sql, params, chunk_size):
            if pid is None:
                yield whole_text
            else:
                yield splice_jsonb(job, ctx if k is None else messages.prefix(cid, k), mid, after, pieces.jsonb(pid))
        return
    messages = Messages(release, "canonical")
    canonical = pieces.canonical
    sql = "SELECT procedure_id, context_len, conversation_id, CAST(data AS TEXT) " + _ROWS.format(table=_table())
    for pid, k, cid, text in raw_rows(sql, [release.pk], chunk_size):
        if pid is None:
            yield text
        else:
            yield splice_text(text, canonical(pid), None if k is None else messages.prefix(cid, k))


def csv_lines(release: Release, chunk_size: int = 2000) -> Iterator[str]:
    """Every test's stored CSV record, whole, in download order."""
    middle = Pieces(release).middle
    prefix = Messages(release, "canonical").prefix
    sql = "SELECT procedure_id, context_len, conversation_id, csv_line " + _ROWS.format(table=_table())
    for pid, k, cid, line in raw_rows(sql, [release.pk], chunk_size):
        if pid is None:
            yield line
        else:
            yield splice_csv(line, middle(pid), None if k is None else csv_cell(prefix(cid, k)))


def whole(data: dict[str, Any], pid: int | None, pieces: Pieces, context=None) -> dict[str, Any]:
    """A decoded row made whole (whole rows are already)."""
    if pid is not None:
        data["intent"], data["procedure"], data["apis"] = pieces.values(pid)
    if context is not None:
        data["context"] = context
    return data


def release_test_rows(release: Release | int, *, conversation_ids: Iterable[int] | None = None,
              entry_ids: Iterable[int] | None = None, chunk_size: int = 2000
              ) -> Iterator[tuple[int, int, int, dict[str, Any]]]:
    """The accessor for whole test rows: (entry pk, conversation id, position, row) in
    (conversation, position) order, optionally of some conversations or entries only.
    Rows of one procedure share its intent, procedure and APIs values: read them, do not change them."""
    release = release_of(release)
    qs = release.entries.order_by(*ORDER)
    if conversation_ids is not None:
        qs = qs.filter(conversation_id__in=list(conversation_ids))
    if entry_ids is not None:
        qs = qs.filter(pk__in=list(entry_ids))
    pieces = Pieces(release)
    messages = Messages(release, "values", qs.values("conversation_id") if (
        conversation_ids is not None or entry_ids is not None) else None)
    loads = json.loads
    for pk, conv, pos, pid, k, text in plain_rows(
            qs.values_list("pk", "conversation_id", "position", "procedure_id", "context_len", "data"), chunk_size):
        data = loads(text) if isinstance(text, (str, bytes)) else text
        yield pk, conv, pos, whole(data, pid, pieces, None if k is None else messages.prefix(conv, k))


def release_test_row(entry) -> dict[str, Any]:
    """One ReleaseTest's whole row."""
    data = dict(entry.data or {})
    if entry.procedure_id is None:
        return data
    context = None
    if entry.context_len is not None:
        context = Messages(entry.release, "values", [entry.conversation_id]).prefix(entry.conversation_id,
                                                                                     entry.context_len)
    return whole(data, entry.procedure_id, Pieces(entry.release, only=entry.procedure_id), context)


def records(release: Release, kinds: Iterable[str], chunk_size: int = 2000) -> Iterator[dict[str, Any]]:
    """The release's records of these kinds, decoded, in the order they were frozen. release_create
    stores a conversation record without its tests; they are its test rows' context, expected
    output and position, put back here (records and rows both run in conversation order). A record
    that still holds its tests (frozen before the slim rows, format 1) keeps them as stored."""
    kinds = list(kinds)
    qs = release.records.filter(kind__in=kinds).order_by("id").values_list("kind", "object_id", "data")
    if "conversation" not in kinds:
        yield from (data for _kind, _oid, data in qs.iterator(chunk_size=chunk_size))
        return
    loads = json.loads
    rows = plain_rows(release.entries.order_by(*ORDER).values_list("conversation_id", "context_len", "data"),
                      chunk_size)
    pending = next(rows, None)
    for kind, oid, data in qs.iterator(chunk_size=chunk_size):
        if kind == "conversation":
            tests = []
            while pending is not None and pending[0] <= oid:
                if pending[0] == oid:
                    d = pending[2]
                    d = loads(d) if isinstance(d, (str, bytes)) else d
                    ctx = d["context"] if pending[1] is None else data["messages"][:pending[1]]
                    tests.append({"context": ctx, "expected": d["expected"], "position": d["position"]})
                pending = next(rows, None)
            if not data.get("tests"):
                data["tests"] = tests
        yield data

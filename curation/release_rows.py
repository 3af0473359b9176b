"""Reading a release's test rows, whatever their storage format: the one place that knows it.

Format 1 (releases frozen before format 2, and rows built by hand): every ReleaseTest row is
self-contained, its ``data`` the whole test row and its ``csv_line`` the whole CSV record.

Format 2 (release_create now): a row whose ``procedure_id`` is set is *slim*. Its ``data`` lacks
the three values that are the same for every test of a procedure ("apis", "intent",
"procedure") and its ``csv_line`` lacks the six cells built from them (intent_id … apis). The
release's "procedure" and "intent" records (frozen once per release and covered by the content
hash) hold them; this module splices them back, so every output is the text format 1 gives:

* JSON text, as the database renders the whole row (SQLite: the canonical text stored;
  PostgreSQL: jsonb's rendering, key order by length, ", " and ": " separators). On SQLite the
  slim text is cut at its top-level ``,"job_id":`` and ``,"test_id":`` keys (found from the end:
  the values after them are numbers and lists of strings, which release_freeze checks); on
  PostgreSQL the database renders the keys before and after "procedure" as two texts.
* CSV records: the stored line with the procedure's cells put back after its third comma (the
  first three cells are integers).
* decoded rows (dicts) for evaluation, the Hugging Face export and the preview: the slim row with
  the procedure's values added (shared between rows: read them, do not change them).
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.db import connection, connections

from curation.csv_render import _ENCODE, _cell
from curation.models import Release

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

    def __init__(self, release: Release) -> None:
        self.release = release
        self._values: dict[int, tuple[dict, dict, list]] | None = None
        self._canonical: dict[int, tuple[str, str, str]] = {}
        self._jsonb: dict[int, tuple[str, str, str]] | None = None
        self._middle: dict[int, str] = {}

    def values(self, pid: int) -> tuple[dict, dict, list]:
        """(intent, procedure, apis) as a row holds them."""
        if self._values is None:
            intents, procs = {}, {}
            for kind, oid, data in self.release.records.filter(kind__in=("intent", "procedure")).values_list(
                    "kind", "object_id", "data"):
                (intents if kind == "intent" else procs)[oid] = data
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


def splice_text(text: str, pieces: tuple[str, str, str]) -> str:
    """SQLite: a slim row's canonical text with the procedure's canonical pieces put back."""
    apis, intent, proc = pieces
    k = text.rfind(',"test_id":')
    j = text.rfind(',"job_id":', 0, k)
    return f'{{"apis":{apis},{text[1:j]},"intent":{intent}{text[j:k]},"procedure":{proc}{text[k:]}'


def splice_jsonb(before: str, after: str, pieces: tuple[str, str, str]) -> str:
    """PostgreSQL: the slim row's two halves (as jsonb renders them) around the procedure's pieces."""
    apis, intent, proc = pieces
    return f'{{"apis": {apis}, "intent": {intent}, {before[1:-1]}, "procedure": {proc}, {after[1:]}'


def splice_csv(line: str, middle: str) -> str:
    """A slim CSV record with the procedure's cells put back after its three integer cells."""
    i = line.find(",", line.find(",", line.find(",") + 1) + 1) + 1
    return f"{line[:i]}{middle},{line[i:]}"


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


def json_texts(release: Release, chunk_size: int = 2000) -> Iterator[str]:
    """Every test row as the JSON text the database renders for the whole row, in download order."""
    pieces = Pieces(release)
    if connection.vendor == "postgresql":
        sql = (f"SELECT procedure_id, CASE WHEN procedure_id IS NULL THEN data::text END, "
               f"CASE WHEN procedure_id IS NOT NULL THEN (data - %s::text[])::text END, "
               f"CASE WHEN procedure_id IS NOT NULL THEN (data - %s::text[])::text END "
               f"FROM {_table()} WHERE release_id = %s ORDER BY conversation_id, position, id")
        for pid, whole, before, after in raw_rows(sql, [list(PG_AFTER), list(PG_BEFORE), release.pk], chunk_size):
            yield whole if pid is None else splice_jsonb(before, after, pieces.jsonb(pid))
        return
    sql = (f"SELECT procedure_id, CAST(data AS TEXT) FROM {_table()} WHERE release_id = %s "
           "ORDER BY conversation_id, position, id")
    canonical = pieces.canonical
    for pid, text in raw_rows(sql, [release.pk], chunk_size):
        yield text if pid is None else splice_text(text, canonical(pid))


def csv_lines(release: Release, chunk_size: int = 2000) -> Iterator[str]:
    """Every test's stored CSV record, whole, in download order."""
    pieces = Pieces(release)
    middle = pieces.middle
    sql = (f"SELECT procedure_id, csv_line FROM {_table()} WHERE release_id = %s "
           "ORDER BY conversation_id, position, id")
    for pid, line in raw_rows(sql, [release.pk], chunk_size):
        yield line if pid is None else splice_csv(line, middle(pid))


def whole(data: dict[str, Any], pid: int | None, pieces: Pieces) -> dict[str, Any]:
    """A decoded row made whole (format 1 rows are already)."""
    if pid is not None:
        data["intent"], data["procedure"], data["apis"] = pieces.values(pid)
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
    loads = json.loads
    for pk, conv, pos, pid, text in plain_rows(
            qs.values_list("pk", "conversation_id", "position", "procedure_id", "data"), chunk_size):
        data = loads(text) if isinstance(text, (str, bytes)) else text
        yield pk, conv, pos, whole(data, pid, pieces)


def release_test_row(entry) -> dict[str, Any]:
    """One ReleaseTest's whole row."""
    data = dict(entry.data or {})
    return whole(data, entry.procedure_id, Pieces(entry.release)) if entry.procedure_id is not None else data


def records(release: Release, kinds: Iterable[str], chunk_size: int = 2000) -> Iterator[dict[str, Any]]:
    """The release's records of these kinds, decoded, in the order they were frozen. A format 2
    conversation record is stored without its tests; they are its test rows' context, expected
    output and position, put back here (records and rows both run in conversation order)."""
    kinds = list(kinds)
    qs = release.records.filter(kind__in=kinds).order_by("id").values_list("kind", "object_id", "data")
    if release.format != 2 or "conversation" not in kinds:
        yield from (data for _kind, _oid, data in qs.iterator(chunk_size=chunk_size))
        return
    loads = json.loads
    rows = plain_rows(release.entries.order_by(*ORDER).values_list("conversation_id", "data"), chunk_size)
    pending = next(rows, None)
    for kind, oid, data in qs.iterator(chunk_size=chunk_size):
        if kind == "conversation":
            tests = []
            while pending is not None and pending[0] <= oid:
                if pending[0] == oid:
                    d = pending[1]
                    d = loads(d) if isinstance(d, (str, bytes)) else d
                    tests.append({"context": d["context"], "expected": d["expected"], "position": d["position"]})
                pending = next(rows, None)
            data["tests"] = tests
        yield data

"""The tests.csv of a format 1 release without current stored CSV records, rendered from its rows.

A format 1 row is the whole test as JSON text. On SQLite that is the canonical text release_create
stored (sorted keys, minified): ``{"apis":…,"context":[…],<A>,"expected":{…}[,"expected_action":…]
<B>,"position":N,"procedure":{…},"test_id":N}``. Decoding all of it per row (release_rows_slim)
and rendering the dict (CsvLineMaker) cost ~25 µs a row; here a row of that shape is cut apart
as text instead:

* the APIs and the procedure are only located (each distinct text is decoded once): the six
  procedure cells come from CsvLineMaker's per-procedure cache, keyed by the procedure's id;
* a context of messages {"content", "role"} in canonical text (proved by a regular expression)
  is its own encoding: CsvLineMaker's context state is moved on as text (the previous context
  plus the new messages' text), nothing decoded or encoded;
* the keys before "expected" (<A>: conversation and graph ids, mode) and between it and
  "position" (<B>: flowgraph, intent, job, noise, path) are the same for a conversation's tests:
  their cells are cached by their text; only "expected" (and "expected_action") is decoded per row.

Every cut is proved, not assumed: a raw ``,"key":`` can only be a key (a JSON string holds no raw
quote), and each cut-out part must decode on its own, which fails if a cut fell inside a nested
value; the parts' keys must be disjoint. A row that is not of this shape (hand-built rows, other
key sets, a procedure the cache has not seen yet, anything odd) is decoded and rendered by the
existing per-row path (Format1Reader + CsvLineMaker), which shares its state with this one, so
the output is byte-for-byte that of ``csv_chunks(release_rows_slim(release))``.
PostgreSQL (jsonb text, its own key order) and format 2 releases take the existing path.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from operator import itemgetter

from django.db import connections

from curation.models import Release, ReleaseTest
from curation.releases.csv_render import BATCH, CSV_HEADER, CsvLineMaker, _cell, _joined, expected_cells
from curation.releases.format1_rows import Format1Reader, release_rows_slim
from curation.releases.rows import raw_rows

_SCAN = json.JSONDecoder().scan_once
# Keys the row's own cuts take: the cached parts must not hold them (a duplicate key's last value
# wins in a decode, so a part holding one of these could change what the row decodes to).
_CUT_KEYS = frozenset(("apis", "context", "expected", "expected_action", "position", "procedure", "test_id"))
_LIMIT = 20_000  # entries per text cache before it is emptied (memory stays flat)
_BIG_LIMIT = 2_000  # the same for the caches of long texts (APIs, procedures)


# The canonical text (_ENCODE's) of a message {"content": str, "role": str}: a string holds no raw
# quote, backslash or control character, and only the escapes the encoder writes (\" \\ \b \f \n
# \r \t, \u00XX for the other control characters). Text matching it decodes to values that encode
# back to the same text, so a context of such messages needs no decode and no encode.
_STR = r'"[^"\\\x00-\x1f]*(?:\\(?:["\\bfnrt]|u00(?:0[0-7bef]|1[0-9a-f]))[^"\\\x00-\x1f]*)*"'
_MSG = r'\{"content":' + _STR + r',"role":' + _STR + r'\}'
_WHOLE = re.compile(r"\[(?:" + _MSG + r"(?:," + _MSG + r")*)?\]")  # a whole context
_ITEMS = re.compile(_MSG + r"(?:," + _MSG + r")*\]")  # the messages a context adds, and its "]"
_POSITION = re.compile(r',"position":(?:0|[1-9][0-9]*),"procedure":(?=\{)')
_TEST_ID = re.compile(r"(0|[1-9][0-9]*)\}")


def _none(_text: str) -> None:
    return None


class FastCsvLines:
    """Renders format 1 row texts (SQLite) as CSV records; ``fast(text)`` is None when the row is
    not of the shape it proves, and ``line`` (also ``__call__``) then takes the per-row path.

    The state shared with the per-row path is the reader's previous context (its text and list)
    and CsvLineMaker's (conversation, context text, list). A fast row moves the texts only; the
    lists are left unset (``lazy``) and decoded from the previous context's text, which is what
    the per-row path would hold (the reader's list always decodes from its text), before the
    per-row path next runs."""

    def __init__(self, release: Release) -> None:
        self.read = Format1Reader(release, sqlite=True)
        self.make = CsvLineMaker()
        self.lazy = False
        self.head = "\0"  # the text before the context of the previous row ('{"apis":…,"context":[')
        self.grows = "\0"  # the previous context's text without its "]", and a comma
        self.apis_seen: set[str] = set()  # APIs texts each proved one whole JSON value
        self.proc_tail, self.proc = "\0", None  # the previous procedure's text and ',"test_id":'; its value
        self.procs: dict[str, dict | None] = {}  # procedure text -> its value (None: not a plain object)
        self.parts: dict[tuple[str, str], tuple | None] = {}  # (<A>, <B>) -> their cells (None: odd)
        self.fallbacks = 0
        self.slow = self.per_row
        self.a, self.b, self.ab = "\0", "\0", None  # the previous row's <A>,"expected":{ and <B>,"position": and their cells

    def per_row(self, text: str) -> str:
        """The existing path for one row (the lists of a lazy state decoded first)."""
        self.fallbacks += 1
        if self.lazy:
            self.lazy = False
            self.read.prev_ctx = self.make.prev = json.loads(self.read.prev_text)
        line = self.make(self.read(text, None))
        self.grows = self.read.prev_text[:-1] + ","
        return line

    def fast(self, t: str) -> str | None:
        """The fast path alone: None where ``line`` takes the per-row path."""
        self.slow = _none
        try:
            return self.line(t)
        finally:
            self.slow = self.per_row

    def line(self, t: str) -> str | None:
        """The row's CSV record (``slow(t)`` where the row is not of the shape proved here)."""
        # The APIs: the same text as the previous row's mostly, else one proved before, else scanned.
        if t.startswith(self.head):
            cs = len(self.head) - 1
        else:
            if not t.startswith('{"apis":['):
                return self.slow(t)
            c = t.find(',"context":[', 8)
            if c < 0:
                return self.slow(t)
            a = t[8:c]
            if a not in self.apis_seen:
                try:
                    if _SCAN(t, 8)[1] != c:
                        return self.slow(t)
                except (ValueError, StopIteration):
                    return self.slow(t)
                if len(self.apis_seen) > _BIG_LIMIT:
                    self.apis_seen.clear()
                self.apis_seen.add(a)
            self.head = t[:c + 12]
            cs = c + 11
        # The context: the previous one and new messages, or the same, or a whole one, as canonical text.
        read = self.read
        pt = read.prev_text
        n = len(pt)
        kind = 0  # 1: the previous context and new messages, 2: the same, 3: a whole one
        if n > 2 and t.startswith(self.grows, cs):
            m = _ITEMS.match(t, cs + n)
            if m is not None:
                kind, ce = 1, m.end()
        elif n >= 2 and t.startswith(pt, cs):
            kind, ce = 2, cs + n
        if kind == 0:
            m = _WHOLE.match(t, cs)
            if m is None:
                return self.slow(t)
            kind, ce = 3, m.end()
        same = t.startswith(self.a, ce)  # <A> as in the previous row (proved then)
        if same:
            e = ce + len(self.a) - 13
        else:
            e = t.find(',"expected":{', ce)
            if e < 0 or t[ce:ce + 1] != ",":
                return self.slow(t)
        try:
            exp, x = _SCAN(t, e + 12)
            action = None
            if t.startswith(',"expected_action":', x):
                action, x = _SCAN(t, x + 19)
        except (ValueError, StopIteration):
            return self.slow(t)
        # ,"position":N,"procedure":{…},"test_id":N} ends the row.
        if same and t.startswith(self.b, x):  # <B> too: the previous row's cells
            r = x + len(self.b) - 12
            p = t.find(',"procedure":{', r + 12) + 13
            pos = t[r + 12:p - 13]
            same = p > 12 and pos.isdigit() and pos.isascii() and (pos[0] != "0" or len(pos) == 1)
        else:
            same = False
        if not same:
            m = _POSITION.search(t, x)
            if m is None:
                return self.slow(t)
            r, p = m.span()
        if t.startswith(self.proc_tail, p):
            proc = self.proc
            k = p + len(self.proc_tail)
        else:
            k = t.rfind(',"test_id":', p)
            if k < 0:
                return self.slow(t)
            ptext = t[p:k]
            proc = self.procs.get(ptext, False)
            if proc is False:
                proc = self._proc(ptext)
            self.proc_tail, self.proc = ptext + ',"test_id":', proc
            k += 11
        tid = _TEST_ID.fullmatch(t, k)
        if tid is None or proc is None:
            return self.slow(t)
        if same:
            parts = self.ab
        else:
            parts = self.parts.get((t[ce:e], t[x:r]), False)
            if parts is False:
                parts = self._parts(t[ce:e], t[x:r])
            if parts is None:
                return self.slow(t)
            self.a, self.b, self.ab = t[ce:e + 13], t[x:r + 12], parts
        make = self.make
        middle = make.procedures.get(proc["id"])
        if middle is None:  # the per-row path builds and caches it (once per procedure)
            return self.slow(t)
        try:
            rest = expected_cells(exp) if exp.__class__ is dict else None
            action_cell = _cell(action or "")
        except Exception:  # noqa: BLE001 - the per-row path raises (or renders) it as before
            return self.slow(t)
        if rest is None:
            return self.slow(t)
        conv_id, conv_text, tail = parts
        # CsvLineMaker.context_cell's three outcomes, from text: the same conversation's context
        # grown by new messages (encoded, they are their text), unchanged, or a new one (its text).
        if conv_id == make.conv_id:
            if kind == 1:
                grown = "," + t[cs + n:ce]
                make.context = make.context[:-1] + grown
                make.escaped = make.escaped[:-1] + grown.replace('"', '""')
            elif kind == 3:
                if pt != "[]":  # not a prefix as text; as values it might be (1 == 1.0): per-row path
                    return self.slow(t)
                # After an empty context CsvLineMaker grows "[]" by the whole new one: its text.
                make.context = t[cs:ce]
                make.escaped = make.context.replace('"', '""')
        else:  # (only a whole context proved canonical is its own encoding)
            if kind != 3 and ((m := _WHOLE.match(t, cs)) is None or m.end() != ce):
                return self.slow(t)
            make.conv_id, make.context = conv_id, t[cs:ce]
            make.escaped = make.context.replace('"', '""')
        if kind != 2:
            read.prev_text = pt = t[cs:ce]
            self.grows = pt[:-1] + ","
            read.prev_ctx = make.prev = None  # lazy: decoded from prev_text when the per-row path needs it
            self.lazy = True
        ctx_text, escaped = make.context, make.escaped
        context = escaped if len(escaped) == len(ctx_text) and "," not in ctx_text else '"' + escaped + '"'
        return (f"{tid.group(1)},{conv_text},{t[r + 12:p - 13]},{middle},{context},{','.join(rest)},{tail},"
                f"{action_cell}")

    __call__ = line

    def _proc(self, ptext: str) -> dict | None:
        try:
            value, end = _SCAN(ptext, 0)
        except (ValueError, StopIteration):
            value, end = None, -1
        ok = end == len(ptext) and value.__class__ is dict and "text" in value and value.get("id").__class__ is int
        if len(self.procs) > _BIG_LIMIT:
            self.procs.clear()
        got = self.procs[ptext] = value if ok else None
        return got

    def _parts(self, a: str, b: str) -> tuple | None:
        """The cells of the keys before "expected" (a) and between it and "position" (b), when both
        decode on their own, hold none of the cut keys, share no key, and a names the conversation."""
        got = None
        try:
            da = json.loads("{" + a[1:] + "}") if a[:1] == "," else None
            db = (json.loads("{" + b[1:] + "}") if b[:1] == "," else None) if b else {}
        except ValueError:
            da = db = None
        # (The conversation id is cached and compared with the previous row's: a plain value only.)
        if (da.__class__ is dict and db.__class__ is dict and da.get("conversation_id").__class__ in (int, str)
                and _CUT_KEYS.isdisjoint(da) and _CUT_KEYS.isdisjoint(db) and da.keys().isdisjoint(db)):
            d = {**da, **db}
            try:
                fg, cg = d.get("flowgraph_id"), d.get("conversation_graph_id")
                noise, nodes = d.get("noise_kinds"), d.get("path_node_ids")
                got = (d["conversation_id"], str(d["conversation_id"]), ",".join((
                    _cell(",".join(noise)) if noise else "", "" if fg is None else str(fg),
                    "" if cg is None else str(cg), _cell(" ".join(nodes)) if nodes else "")))
            except Exception:  # noqa: BLE001 - odd values: the per-row path renders (or raises) them
                got = None
        if len(self.parts) > _LIMIT:
            self.parts.clear()
        self.parts[(a, b)] = got
        return got


def rendered_csv_lines(release: Release, chunk_size: int = 2000) -> Iterator[str]:
    """The CSV records of a release's rows, equal to ``map(CsvLineMaker(), release_rows_slim(release))``."""
    using = release._state.db or "default"
    if release.format == 2 or connections[using].vendor != "sqlite":
        return map(CsvLineMaker(), release_rows_slim(release, chunk_size))
    # The stored text as it is (release_rows_slim's SQLite rows), in download order.
    table = connections[using].ops.quote_name(ReleaseTest._meta.db_table)
    texts = raw_rows(f"SELECT CAST(data AS TEXT) FROM {table} WHERE release_id = %s "
                     "ORDER BY conversation_id, position, id", [release.pk], chunk_size, using=using)
    return map(FastCsvLines(release).line, map(itemgetter(0), texts))


def rendered_csv_chunks(release: Release, batch: int = BATCH) -> Iterator[str]:
    """tests.csv rendered from the rows (release_csv's fallback): a header, then one record per test."""
    yield CSV_HEADER
    yield from _joined(rendered_csv_lines(release), batch)

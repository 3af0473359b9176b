"""CSV for everything the product writes: the one formula guard and the ALMITA-style test records.

Every CSV (release tests, verdicts, run results, analytics) passes its text cells through
``formula_safe`` (or ``_cell``, which applies the same rule while quoting), so a cell can never
start a spreadsheet formula. Split out of curation.releases.exports, which re-exports these names.
"""
from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any

from generation.pipeline.extract import format_api_call

BATCH = 1000  # rows per yielded chunk: big enough to amortise, small enough to stay flat

# The released test columns, one schema for tests.csv and the Hugging Face folder (same names, same
# order; docs/datasets.md). tests.jsonl holds the same values nested (curation.releases.exports.flat_row).
CSV_COLUMNS = [
    "test_id", "conversation_id", "position", "intent_id", "intent", "client", "procedure_id",
    "procedure", "apis", "context", "expected_type", "expected_content", "expected_api_name",
    "expected_parameters", "noise_kinds", "flowgraph_id", "conversation_graph_id", "path_node_ids",
    "expected_action",
]
def _make_encoder() -> Callable[[Any], str]:
    """Compact JSON with sorted keys (jsonb reorders keys; output must not depend on the database).

    json.dumps builds a fresh C encoder on every call; for millions of small values that set-up
    dominates, so the C encoder is built once here (falling back to the stdlib call without it).
    """
    try:
        from json.encoder import c_make_encoder, encode_basestring
    except ImportError:  # pragma: no cover - CPython always has the C accelerator
        c_make_encoder = None
    if c_make_encoder is None:  # pragma: no cover
        return json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode

    def default(o: Any) -> Any:
        raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")

    # (markers, default, encoder, indent, key_separator, item_separator, sort_keys, skipkeys, allow_nan)
    encoder = c_make_encoder(None, default, encode_basestring, None, ":", ",", True, False, True)

    def encode(o: Any) -> str:
        if isinstance(o, str):
            return encode_basestring(o)
        return "".join(encoder(o, 0))

    return encode


_ENCODE = _make_encoder()
_CACHE_LIMIT = 20_000


# A cell starting with one of these is read as a formula by spreadsheet programs (TAB and CR
# too: some strip them and then see the formula behind). OWASP's advice: prefix a quote.
FORMULA_START = frozenset("=+-@\t\r")


# A negative number ("-0.4000", "-1e-05") is not a formula: it stays as written, so a spreadsheet
# reads it as a number. Anything else starting with = + - @ tab or CR gets the quote.
_PLAIN_NUMBER = re.compile(r"-(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?")


def _risky(text: str) -> bool:
    return text[:1] in FORMULA_START and _PLAIN_NUMBER.fullmatch(text) is None


def formula_safe(text: str) -> str:
    """The one CSV formula guard: every CSV the product writes passes its text cells through it."""
    return "'" + text if _risky(text) else text


def spreadsheet_safe(row: dict[str, Any]) -> dict[str, Any]:
    """A CSV row (for csv.DictWriter) whose text cells cannot start a spreadsheet formula."""
    return {k: (formula_safe(v) if isinstance(v, str) else v) for k, v in row.items()}


def _cell(value: Any) -> str:
    """One RFC 4180 field, quoted only when it must be (csv.QUOTE_MINIMAL's rule).

    Hand-written because the csv module walks long fields character by character: a row carries
    the whole procedure text, and this is several times faster while producing the same bytes.
    """
    s = value if isinstance(value, str) else str(value)
    if s[:1] in FORMULA_START and _risky(s):
        s = "'" + s
    if '"' in s:
        return '"' + s.replace('"', '""') + '"'
    if "," in s or "\n" in s or "\r" in s:
        return '"' + s + '"'
    return s


CSV_HEADER = ",".join(CSV_COLUMNS) + "\n"


class CsvLineMaker:
    """Renders frozen test rows as ALMITA-style CSV records (RFC 4180, readable by csv.reader).

    Feed it rows in release order (conversation, position): the contexts of one conversation's
    tests are prefixes of each other, so only the messages a context adds are encoded; the
    intent, procedure and APIs cells are built once per procedure.
    """

    def __init__(self) -> None:
        self.procedures: dict[Any, str] = {}
        self.conv_id: Any = None
        self.prev: list = []
        self.context = "[]"  # the context's canonical JSON (release_freeze reuses it)
        self.escaped = "[]"  # the same with quotes doubled, grown alongside it

    def context_cell(self, conversation_id: Any, ctx: list) -> str:
        """The context's CSV cell; the next row's context is encoded from what it adds to this one."""
        prev = self.prev
        n = len(prev)
        if conversation_id == self.conv_id and len(ctx) >= n and ctx[:n] == prev:
            if len(ctx) > n:
                tail = ("," if n else "") + _ENCODE(ctx[n:])[1:]
                self.context = self.context[:-1] + tail
                self.escaped = self.escaped[:-1] + tail.replace('"', '""')
        else:
            self.conv_id, self.context = conversation_id, _ENCODE(ctx)
            self.escaped = self.context.replace('"', '""')
        self.prev = ctx
        # A JSON array never starts a formula; it needs quotes once it holds a string or a comma.
        return self.escaped if len(self.escaped) == len(self.context) and "," not in self.context else (
            '"' + self.escaped + '"')

    def __call__(self, d: dict[str, Any]) -> str:
        ctx = d["context"]
        context = self.context_cell(d["conversation_id"], ctx)
        proc = d["procedure"]
        middle = self.procedures.get(proc["id"])
        if middle is None:
            if len(self.procedures) > _CACHE_LIMIT:
                self.procedures.clear()
            intent = d["intent"]
            middle = self.procedures[proc["id"]] = ",".join((
                _cell(intent["id"]), _cell(intent["name"]), _cell(intent["client"]), _cell(proc["id"]),
                _cell(proc["text"]), _cell(_ENCODE(d["apis"]))))
        rest = expected_cells(d["expected"])
        fg, cg = d.get("flowgraph_id"), d.get("conversation_graph_id")
        noise, nodes = d.get("noise_kinds"), d.get("path_node_ids")
        return ",".join((
            str(d["test_id"]), str(d["conversation_id"]), str(d["position"]), middle, context, *rest,
            _cell(",".join(noise)) if noise else "", "" if fg is None else str(fg),
            "" if cg is None else str(cg), _cell(" ".join(nodes)) if nodes else "",
            _cell(d.get("expected_action") or ""),
        ))


def expected_cells(exp: dict[str, Any]) -> tuple[str, str, str, str]:
    """The cells expected_type, expected_content, expected_api_name, expected_parameters."""
    kind = exp["type"]
    if kind == "api_call":
        name, params = exp["name"], exp.get("parameters") or {}
        return (kind, _cell(format_api_call(name, params)), _cell(name), _cell(_ENCODE(params)))
    return (kind if kind == "reply" else _cell(kind), _cell(exp.get("content", "")), "", "")


def _joined(lines: Iterable[str], batch: int) -> Iterator[str]:
    lines = iter(lines)
    while True:
        buf = list(islice(lines, batch))  # taken in C, not one append per line
        if not buf:
            return
        buf.append("")
        yield "\n".join(buf)


def csv_chunks(rows: Iterable[dict[str, Any]], batch: int = BATCH) -> Iterator[str]:
    """ALMITA-style CSV from frozen test rows: a header, then one record per test."""
    yield CSV_HEADER
    yield from _joined(map(CsvLineMaker(), rows), batch)


def csv_line_chunks(lines: Iterable[str], batch: int = BATCH) -> Iterator[str]:
    """ALMITA-style CSV from records rendered when the release was created (ReleaseTest.csv_line)."""
    yield CSV_HEADER
    yield from _joined(lines, batch)


def guarded(rows: Iterable[Sequence[Any]]) -> Iterator[Sequence[Any]]:
    """Rows with ``formula_safe`` applied to every text cell; a row without a risky first
    character (nearly all) passes through as it is, after one check per cell."""
    start = FORMULA_START
    for row in rows:
        for v in row:
            if v.__class__ is str and v[:1] in start and _risky(v):
                yield [("'" + c) if c.__class__ is str and _risky(c) else c for c in row]
                break
        else:
            yield row


def csv_stream(header: Sequence[str], rows: Iterable[Sequence[Any]], batch: int = BATCH) -> Iterator[str]:
    """A guarded CSV (csv.writer's dialect, like csv.DictWriter) as chunks of `batch` rows."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(header)
    pending: list[Sequence[Any]] = []
    for row in guarded(rows):
        pending.append(row)
        if len(pending) >= batch:
            writer.writerows(pending)
            pending = []
            yield buf.getvalue()
            buf.seek(0)
            buf.truncate()
    writer.writerows(pending)
    yield buf.getvalue()

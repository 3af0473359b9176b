"""Streaming writers for releases: ALMITA-style CSV, JSON Lines, a Hugging Face folder, zip bundles.

Every writer is a generator of text (or bytes) chunks over an iterator of rows, so the same
functions feed a StreamingHttpResponse, a file on disk and the benchmark, and memory stays flat:
rows come from the database with ``.iterator(chunk_size=…)`` and are never collected. The CSV
rendering and the formula guard live in curation.releases.csv_render (re-exported here).
"""
from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from django.db.models import QuerySet

from curation.models import Release, ReleaseTest
from curation.releases.csv_render import (  # noqa: F401  (re-exported: callers and tests import them from here)
    _ENCODE,
    BATCH,
    CSV_COLUMNS,
    CSV_HEADER,
    FORMULA_START,
    CsvLineMaker,
    _cell,
    csv_chunks,
    csv_line_chunks,
    csv_stream,
    formula_safe,
    guarded,
    spreadsheet_safe,
)
from curation.releases.rows import (  # noqa: F401  (plain_rows: re-exported)
    Pieces,  # noqa: F401
    csv_lines,
    json_texts,
    plain_rows,
    records,
    release_test_rows,
    whole,
)
from curation.releases.hf import HF_ENCODE as _HF_ENCODE  # noqa: F401  (re-exported)
from curation.releases.hf import flat_row, hf_lines, hf_row  # noqa: F401  (re-exported)

JSONL_FILES = {
    "tests.jsonl": None,  # the frozen test rows themselves
    "conversations.jsonl": ("conversation",),
    "graphs.jsonl": ("flowgraph", "conversation_graph", "path"),
    "procedures.jsonl": ("intent", "procedure"),
}
FORMATS = ("csv", "jsonl", "hf")


def _dumps(value: Any) -> str:
    # Sorted keys: Postgres jsonb reorders keys, and a CSV cell must not depend on the database.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


# --- rows -------------------------------------------------------------------------------------

def release_entries(release: Release) -> QuerySet[ReleaseTest]:
    """A release's tests in download order (conversation, position).

    ReleaseTest's index on (release, conversation_id, position, id) serves this order, so the
    database walks the index instead of sorting: without it SQLite sorted every ~4 KB row in a
    temporary b-tree, which was most of a download's time.
    """
    return release.entries.order_by("conversation_id", "position", "id")


def release_rows(release: Release, chunk_size: int = 2000) -> Iterator[dict[str, Any]]:
    """Whole test rows, decoded (curation.releases.rows.release_test_rows, whatever the storage format)."""
    return (row for _pk, _conv, _pos, row in release_test_rows(release, chunk_size=chunk_size))


def release_rows_raw(release: Release, chunk_size: int = 2000) -> Iterator[str]:
    """Whole test rows as the database's JSON text: no decode/encode round trip for JSONL."""
    return json_texts(release, chunk_size)


def release_records(release: Release, kinds: Iterable[str], chunk_size: int = 2000) -> Iterator[dict[str, Any]]:
    return records(release, kinds, chunk_size)


# --- writers ------------------------------------------------------------------------------------

def _line_safe(chunk: str) -> str:
    """Escape U+2028/U+2029: valid raw in JSON, but str.splitlines() and some readers break lines there."""
    if "\u2028" in chunk or "\u2029" in chunk:
        chunk = chunk.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return chunk


def jsonl_chunks(rows: Iterable[dict[str, Any] | str], batch: int = BATCH) -> Iterator[str]:
    """One JSON value per line; strings are taken as already-encoded JSON (e.g. stored JSON text)."""
    buf: list[str] = []
    for row in rows:
        buf.append(row if isinstance(row, str) else _ENCODE(row))
        if len(buf) >= batch:
            buf.append("")
            yield _line_safe("\n".join(buf))
            buf = []
    if buf:
        buf.append("")
        yield _line_safe("\n".join(buf))


def release_csv_lines(release: Release, chunk_size: int = 2000) -> Iterator[str]:
    return csv_lines(release, chunk_size)


def release_csv(release: Release) -> Iterator[str]:
    """The download: every release stores its CSV records (migration 0012 rendered the missing ones)."""
    return csv_line_chunks(release_csv_lines(release))


HF_LICENCES = {"CC-BY-4.0": "cc-by-4.0", "CC-BY-SA-4.0": "cc-by-sa-4.0", "CC0-1.0": "cc0-1.0",
               "CC-BY-NC-4.0": "cc-by-nc-4.0"}


def hf_readme(release: Release) -> str:
    header = (
        "---\n"
        f"license: {HF_LICENCES.get(release.licence, 'other')}\n"
        f"pretty_name: {json.dumps(f'{release.name} v{release.version}')}\n"
        "configs:\n- config_name: default\n  data_files:\n  - split: test\n    path: tests.jsonl\n"
        "---\n\n"
    )
    usage = (
        "\n## Loading\n\n```python\nfrom datasets import load_dataset\n"
        "ds = load_dataset(\"json\", data_files={\"test\": \"tests.jsonl\"})\n```\n\n"
        "`apis`, `expected_parameters` and `path_node_ids` are JSON strings; `noise_kinds` is comma-separated; "
        "`flowgraph_id` and `conversation_graph_id` are -1 for conversations written straight from a procedure. "
        "The columns are tests.csv's, in the same order.\n"
    )
    return header + release.card + usage


class _Sink(io.RawIOBase):
    """An unseekable write target that hands back what was written since the last drain."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:  # type: ignore[override]
        self.parts.append(bytes(b))
        return len(b)

    def drain(self) -> bytes:
        data = b"".join(self.parts)
        self.parts = []
        return data


def zip_chunks(members: list[tuple[str, Callable[[], Iterable[str | bytes]]]]) -> Iterator[bytes]:
    """Stream a zip built from (name, chunk source) pairs; nothing is held beyond one chunk."""
    sink = _Sink()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, source in members:
            with zf.open(name, "w", force_zip64=True) as member:
                for chunk in source():
                    member.write(chunk.encode() if isinstance(chunk, str) else chunk)
                    data = sink.drain()
                    if data:
                        yield data
            data = sink.drain()
            if data:
                yield data
    yield sink.drain()


# --- release files --------------------------------------------------------------------------------

def file_sources(release: Release) -> dict[str, Callable[[], Iterator[str]]]:
    """Every downloadable file of a release, as a function returning its chunks."""
    sources: dict[str, Callable[[], Iterator[str]]] = {
        "tests.csv": lambda: release_csv(release),
        "tests.jsonl": lambda: jsonl_chunks(release_rows_raw(release)),
        "README.md": lambda: iter([release.card]),
        "manifest.json": lambda: iter([json.dumps(release.manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"]),
    }
    for name, kinds in JSONL_FILES.items():
        if kinds:
            sources[name] = (lambda k=kinds: jsonl_chunks(release_records(release, k)))
    return sources


def hf_sources(release: Release) -> dict[str, Callable[[], Iterator[str]]]:
    return {
        "README.md": lambda: iter([hf_readme(release)]),
        # Encoded in column order (not sorted): `datasets` takes its column order from the keys.
        # Stored lines (curation.releases.hf), byte for byte hf_row's rendering.
        "tests.jsonl": lambda: jsonl_chunks(hf_lines(release)),
        "manifest.json": lambda: iter([json.dumps(release.manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"]),
    }


BUNDLES = {
    "jsonl.zip": lambda r: [(n, s) for n, s in file_sources(r).items() if n.endswith((".jsonl", ".md", ".json"))],
    "hf.zip": lambda r: [(f"{_slug(r)}/{n}", s) for n, s in hf_sources(r).items()],
}


def _slug(release: Release) -> str:
    base = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in release.name.lower()).strip("-") or "release"
    return f"{base}-v{release.version}"


def download_name(release: Release, file: str) -> str:
    return f"{_slug(release)}-{file}"


def write_chunks(path: Path, chunks: Iterable[str | bytes]) -> int:
    n = 0
    with open(path, "wb") as fh:
        for chunk in chunks:
            data = chunk.encode() if isinstance(chunk, str) else chunk
            fh.write(data)
            n += len(data)
    return n


def export_release(release: Release, fmt: str, out: Path) -> list[Path]:
    """Write a release to disk: csv → one file; jsonl and hf → a folder. Returns the files written."""
    out = Path(out)
    if fmt == "csv":
        if out.is_dir():
            out = out / download_name(release, "tests.csv")
        out.parent.mkdir(parents=True, exist_ok=True)
        write_chunks(out, file_sources(release)["tests.csv"]())
        return [out]
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    out.mkdir(parents=True, exist_ok=True)
    sources = hf_sources(release) if fmt == "hf" else {
        n: s for n, s in file_sources(release).items() if not n.endswith(".csv")}
    written = []
    for name, source in sources.items():
        write_chunks(out / name, source())
        written.append(out / name)
    return written

"""The portable release file (the runner's input): the release's tests.jsonl with a metadata
header and the workflows the tests refer to. Format: evaluation/runner/release_file.py and
docs/agent-protocol.md. Streams, like the other downloads (curation.releases.exports)."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from curation.models import Release
from curation.releases.services import jsonl_chunks, release_rows_raw, write_chunks
from evaluation.runner.release_file import FLOWGRAPH_KEY, FORMAT, HEADER_KEY


def portable_header(release: Release) -> dict[str, Any]:
    return {HEADER_KEY: {
        # The id and content hash identify the release: the runner refuses a baseline of another one.
        "format": FORMAT, "id": release.pk, "name": release.name, "version": release.version, "kind": release.kind,
        "content_hash": release.content_hash, "created_at": release.created_at.isoformat(),
        "licence": release.licence, "filters": release.filters, "tests": release.entries.count(),
        "manifest": release.manifest,
    }}


def _flowgraph_lines(release: Release) -> Iterator[dict[str, Any]]:
    for object_id, data in (release.records.filter(kind="flowgraph").order_by("object_id")
                            .values_list("object_id", "data").iterator(chunk_size=500)):
        graph = (data or {}).get("graph")
        if isinstance(graph, dict) and graph.get("nodes"):
            yield {FLOWGRAPH_KEY: {"id": object_id, "graph": graph}}


def portable_chunks(release: Release) -> Iterator[str]:
    def rows() -> Iterator[dict[str, Any] | str]:
        yield portable_header(release)
        yield from _flowgraph_lines(release)
        yield from release_rows_raw(release)

    return jsonl_chunks(rows())


def portable_name(release: Release) -> str:
    return f"{release.name}-v{release.version}.almita.jsonl".replace("/", "_").replace(" ", "_")


def export_portable(release: Release, out: Path) -> Path:
    out = Path(out)
    if out.is_dir():
        out = out / portable_name(release)
    write_chunks(out, portable_chunks(release))
    return out

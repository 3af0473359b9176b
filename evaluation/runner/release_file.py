"""The portable release file: one JSON Lines file that a CI job can evaluate without the product.

Line 1 is the header ``{"almita_release": {"format": "almita-release/1", "id", "name", "version",
"content_hash", ...}}`` (the release's id and content hash identify it: a baseline from another
release is refused);
optional ``{"almita_flowgraph": {"id", "graph"}}`` lines carry the workflows (for Mermaid or
pseudo-code knowledge); every other line is one frozen test row, exactly as in the release's
tests.jsonl. A plain tests.jsonl (no header) is read too. Pure Python: no Django.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "almita-release/1"
HEADER_KEY = "almita_release"
FLOWGRAPH_KEY = "almita_flowgraph"


class ReleaseFileError(ValueError):
    """A portable release file that cannot be read; the message names the file, line and field."""


@dataclass
class ReleaseFile:
    meta: dict[str, Any]
    tests: list[dict[str, Any]]
    flowgraphs: dict[str, dict[str, Any]] = field(default_factory=dict)
    tests_sha256: str = ""  # of the test lines as read: identifies a file without a header

    @property
    def identity(self) -> dict[str, Any]:
        """What the results document records of the release, so a baseline can be matched."""
        keys = ("id", "name", "version", "content_hash")
        return {**{k: self.meta[k] for k in keys if self.meta.get(k) not in (None, "")},
                "tests_sha256": self.tests_sha256}

    @property
    def label(self) -> str:
        name = self.meta.get("name") or "release"
        return f"{name}@{self.meta['version']}" if self.meta.get("version") is not None else str(name)

    def with_workflow(self, data: dict[str, Any]) -> dict[str, Any]:
        """Add the test's flowgraph (graph JSON) when the file carries it."""
        fid = data.get("flowgraph_id")
        if isinstance(data.get("flowgraph"), dict) or fid is None:
            return data
        graph = self.flowgraphs.get(str(fid))
        return {**data, "flowgraph": graph} if graph else data


def _check_test(row: dict[str, Any], where: str) -> None:
    context = row.get("context")
    if not isinstance(context, list) or not all(isinstance(m, dict) for m in context):
        raise ReleaseFileError(f"{where}: field 'context' must be a list of messages")
    expected = row.get("expected")
    if not isinstance(expected, dict) or expected.get("type") not in ("reply", "api_call"):
        raise ReleaseFileError(f"{where}: field 'expected' must be an object with type 'reply' or 'api_call'")
    if expected["type"] == "api_call" and not isinstance(expected.get("name"), str):
        raise ReleaseFileError(f"{where}: field 'expected.name' must be a string")
    if row.get("test_id") is None:
        raise ReleaseFileError(f"{where}: field 'test_id' is missing")
    if row.get("conversation_id") is None:
        raise ReleaseFileError(f"{where}: field 'conversation_id' is missing")
    apis = row.get("apis", [])
    if not isinstance(apis, list):
        raise ReleaseFileError(f"{where}: field 'apis' must be a list")


def parse_lines(lines, name: str = "<release>") -> ReleaseFile:
    meta: dict[str, Any] = {}
    tests: list[dict[str, Any]] = []
    flowgraphs: dict[str, dict[str, Any]] = {}
    seen: set[str] = set()
    digest = hashlib.sha256()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{name}:{number}"
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ReleaseFileError(f"{where}: not valid JSON ({exc})") from None
        if not isinstance(row, dict):
            raise ReleaseFileError(f"{where}: a line must be a JSON object")
        if HEADER_KEY in row:
            if number != 1 and (tests or meta):
                raise ReleaseFileError(f"{where}: the '{HEADER_KEY}' header must be the first line")
            meta = row[HEADER_KEY] if isinstance(row[HEADER_KEY], dict) else {}
            fmt = meta.get("format", FORMAT)
            if fmt != FORMAT:
                raise ReleaseFileError(f"{where}: field '{HEADER_KEY}.format' is {fmt!r}; this runner reads {FORMAT}")
            continue
        if FLOWGRAPH_KEY in row:
            fg = row[FLOWGRAPH_KEY]
            if not isinstance(fg, dict) or fg.get("id") is None or not isinstance(fg.get("graph"), dict):
                raise ReleaseFileError(f"{where}: field '{FLOWGRAPH_KEY}' needs 'id' and an object 'graph'")
            flowgraphs[str(fg["id"])] = fg["graph"]
            continue
        _check_test(row, where)
        key = str(row["test_id"])
        if key in seen:
            raise ReleaseFileError(f"{where}: test_id {key} appears twice")
        seen.add(key)
        tests.append(row)
        digest.update(line.strip().encode() + b"\n")
    if not tests:
        raise ReleaseFileError(f"{name}: the file holds no tests")
    declared = meta.get("tests")
    if isinstance(declared, int) and declared != len(tests):
        raise ReleaseFileError(f"{name}: the header announces {declared} tests but the file holds {len(tests)}"
                               " (truncated?)")
    return ReleaseFile(meta=meta, tests=tests, flowgraphs=flowgraphs, tests_sha256=digest.hexdigest())


def load(path: str | Path) -> ReleaseFile:
    path = Path(path)
    try:
        with path.open(encoding="utf-8") as fh:
            return parse_lines(fh, name=str(path))
    except UnicodeDecodeError as exc:
        raise ReleaseFileError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ReleaseFileError(f"{path}: {exc.strerror or exc}") from None

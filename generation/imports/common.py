"""Shared parts of every import format: limits, errors, planned rows, field checks, identities.

Record numbers in messages count from 1, like line numbers.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from generation.pipeline.apis import ApiFormatError, api_to_dict, parse_api_list
from generation.pipeline.formats import GraphFormatError, graph_from_json, graph_to_json

FORMAT_NAME = "almita"
FORMAT_VERSION = 1
MAX_BYTES = 50 * 1024 * 1024
MAX_RECORDS = 200_000
MAX_DEPTH = 40

FORMATS = {
    "auto": "Detect from the content",
    "almita": "Almita JSON / JSON Lines records (intents … conversations with tests)",
    "apis": "The paper's API list {\"apis\": [...]} (A.3 shape)",
    "openai_tools": "OpenAI function-calling tool definitions (e.g. tau-bench tools.json)",
    "openapi": "An OpenAPI 3.0/3.1 document (JSON or YAML): one API per operation",
    "mcp": "An MCP tools/list result (name, description, inputSchema, outputSchema)",
    "flowbench": "FlowBench's release (one workflow per line: scenario, apis, workflow with a Mermaid flowchart)",
    "abcd": "ABCD-style guidelines: flows of subflows with actions and instructions",
}

KINDS = ("intent", "procedure", "flowgraph", "conversation_graph", "path", "conversation")
# The parent reference each kind must (or may) carry; order of KINDS is the order of writing.
PARENTS = {
    "intent": None,
    "procedure": ("intent", "intent"),
    "flowgraph": ("procedure", "procedure"),
    "conversation_graph": ("flowgraph", "flowgraph"),
    "path": ("conversation_graph", "conversation_graph"),
    "conversation": ("procedure", "procedure"),
}
MESSAGE_ROLES = {"user", "assistant", "api", "api_output"}


class ImportFormatError(ValueError):
    """The file was refused; ``record`` and ``field`` say where."""

    def __init__(self, record: str, field: str, message: str) -> None:
        self.record, self.field, self.message = record, field, message
        where = record + (f", key '{field}'" if field else "")
        super().__init__(f"{where}: {message}")


@dataclass
class PlannedRow:
    kind: str
    local_id: str
    key: str
    fields: dict[str, Any]
    parent: str | None = None        # local id of the parent in the plan
    path: str | None = None          # conversations: local id of the sampled path
    apis: list[dict[str, Any]] = field(default_factory=list)
    tests: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ImportResult:
    format: str
    created: dict[str, int] = field(default_factory=dict)
    existing: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def total_created(self) -> int:
        return sum(self.created.values())

    def summary(self) -> str:
        made = ", ".join(f"{n} {k}" for k, n in self.created.items() if n) or "nothing new"
        seen = sum(self.existing.values())
        return f"Imported ({self.format}): created {made}" + (f"; {seen} already present" if seen else "")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in JSON")


def _check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    stack = [(value, 0)]
    while stack:
        v, d = stack.pop()
        if d > limit:
            raise ImportFormatError("document", "", f"nested deeper than {limit} levels")
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
        elif isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            raise ImportFormatError("document", "", "NaN and infinity are not allowed (JSON cannot hold them)")


def load_document(raw: bytes | str) -> Any:
    """Decode a JSON document or JSON Lines (one record per line); refuse NaN and deep nesting."""
    if isinstance(raw, bytes):
        if len(raw) > MAX_BYTES:
            raise ImportFormatError("document", "", f"larger than {MAX_BYTES // (1024 * 1024)} MB")
        try:
            raw = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ImportFormatError("document", "", f"not UTF-8 text (byte {exc.start})") from None
    text = raw.strip()
    if not text:
        raise ImportFormatError("document", "", "the file is empty")
    if not text.startswith(("{", "[")):
        data = _load_yaml(text)  # YAML is recognised by parsing it, whatever its first key
        if not isinstance(data, (dict, list)):
            raise ImportFormatError("document", "", "not JSON, JSON Lines or YAML: it reads as a single "
                                    f"{type(data).__name__ if data is not None else 'empty value'}")
        _check_depth(data)
        return data
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ImportFormatError("document", "", f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        first = text.split("\n", 1)[0]
        try:
            if exc.msg != "Extra data" and "\n" in text and not _parses(first):
                raise ImportFormatError(f"line {exc.lineno}, column {exc.colno}", "", f"invalid JSON: {exc.msg}")
            data = _json_lines(raw)
        except ImportFormatError as json_error:
            data = _yaml_or_none(text)  # a YAML flow mapping starts with "{" too
            if data is None:
                raise json_error from None
    except ValueError as exc:
        raise ImportFormatError("document", "", f"invalid JSON: {exc}") from None
    _check_depth(data)
    return data


def _parses(line: str) -> bool:
    try:
        json.loads(line, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return False
    return True


def _json_lines(text: str) -> list[Any]:
    """JSON Lines; an error names the 1-based line, the record and the column."""
    data: list[Any] = []
    for lineno, line in enumerate(text.lstrip("\ufeff").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"line {lineno} (record {len(data) + 1})"
        try:
            data.append(json.loads(line, parse_constant=_refuse_constant))
        except RecursionError:
            raise ImportFormatError(where, "", "nested too deeply") from None
        except json.JSONDecodeError as exc:
            raise ImportFormatError(f"{where}, column {exc.colno}", "", f"invalid JSON: {exc.msg}") from None
        except ValueError as exc:
            raise ImportFormatError(where, "", f"invalid JSON: {exc}") from None
    return data


def _load_yaml(text: str) -> Any:
    """YAML through the pipeline's bounded safe loader (aliases counted before they are expanded)."""
    from generation.pipeline.toolspecs.documents import load_yaml

    try:
        return load_yaml(text)
    except ApiFormatError as exc:
        where, _, message = str(exc).partition(": ")
        if not where.startswith("line ") or not message:
            where, message = "document", str(exc)
        raise ImportFormatError(where, "", message) from None


def _yaml_or_none(text: str) -> Any:
    try:
        data = _load_yaml(text)
    except ImportFormatError:
        return None
    return data if isinstance(data, (dict, list)) else None


# --- field checks -------------------------------------------------------------------------------

def _text(rec: dict, name: str, where: str, *, required: bool = True, max_length: int | None = None,
          default: str = "") -> str:
    value = rec.get(name, None)
    if value is None:
        if required:
            raise ImportFormatError(where, name, "is required")
        return default
    if not isinstance(value, str):
        raise ImportFormatError(where, name, f"must be a string, not {type(value).__name__}")
    if "\x00" in value:
        raise ImportFormatError(where, name, "contains a NUL character")
    if required and not value.strip():
        raise ImportFormatError(where, name, "must not be empty")
    if max_length is not None and len(value) > max_length:
        raise ImportFormatError(where, name, f"is longer than {max_length} characters")
    return value


def _no_nul(value: Any, where: str, name: str) -> None:
    """Postgres refuses NUL in text and JSON; refuse it everywhere so both databases agree."""
    if "\\u0000" in json.dumps(value):
        raise ImportFormatError(where, name, "contains a NUL character")


def _string_list(rec: dict, name: str, where: str) -> list[str]:
    value = rec.get(name, [])
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(x, str) and x and "\x00" not in x for x in value):
        raise ImportFormatError(where, name, "must be a list of non-empty strings")
    return value


def _choice(rec: dict, name: str, where: str, choices: Iterable[str], default: str) -> str:
    value = rec.get(name, default)
    if value is None:
        return default
    if value not in set(choices):
        raise ImportFormatError(where, name, f"must be one of {', '.join(sorted(choices))}")
    return value


def _int(rec: dict, name: str, where: str, default: int, lo: int, hi: int) -> int:
    value = rec.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ImportFormatError(where, name, f"must be an integer from {lo} to {hi}")
    return value


def _graph(rec: dict, name: str, where: str, kind: str) -> tuple[dict, Any]:
    value = rec.get(name)
    if value is None:
        raise ImportFormatError(where, name, "is required")
    try:
        g = graph_from_json(value)
    except GraphFormatError as exc:
        raise ImportFormatError(where, name, str(exc)) from None
    _no_nul(value, where, name)
    if value.get("kind") not in (None, kind):
        raise ImportFormatError(where, f"{name}.kind", f"must be '{kind}'")
    g.graph["kind"] = kind
    return graph_to_json(g), g


def _apis(items: Any, where: str, notes: list[str] | None = None) -> list[dict[str, Any]]:
    """The APIs of ``items`` in the paper's dict shape; what the document declares but is not kept
    (see :class:`generation.pipeline.apis.ApiList`) is appended to ``notes``."""
    if items is None:
        return []
    try:
        specs = parse_api_list(items if isinstance(items, (list, dict)) else _bad_apis(items))
    except ApiFormatError as exc:
        raise ImportFormatError(where, "apis", str(exc)) from None
    if notes is not None:
        notes += [f"not kept: {line}" for line in getattr(specs, "report", [])]
    out = []
    for i, spec in enumerate(specs):
        d = api_to_dict(spec)
        for fname, limit in (("name", 200),):
            if not d[fname] or len(d[fname]) > limit:
                raise ImportFormatError(where, f"apis[{i}].{fname}", f"must be 1 to {limit} characters")
        if len(d["output"]["name"]) > 200 or len(d["output"]["type"]) > 200:
            raise ImportFormatError(where, f"apis[{i}].output", "name and type must be at most 200 characters")
        _no_nul(d, where, f"apis[{i}]")
        out.append(d)
    return out


def _bad_apis(items: Any) -> Any:
    raise ApiFormatError(f"must be a list of APIs, not {type(items).__name__}")


def _identity(kind: str, parent_key: str, content: dict[str, Any]) -> str:
    blob = json.dumps([kind, parent_key, content], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "imp:" + kind + ":" + hashlib.sha256(blob.encode()).hexdigest()


def _violations(kind: str, g: Any, api_names: set[str] | None) -> list[dict]:
    """Keep the automatic validators' findings as warnings on the imported row."""
    from generation.pipeline.validate import validate_conversation_graph, validate_flowgraph

    try:
        if kind == "flowgraph":
            found = validate_flowgraph(g, api_names=api_names)
        else:
            found = validate_conversation_graph(g, api_names=api_names)
    except Exception as exc:  # a validator bug must not block an import; record it instead
        return [{"rule": "VALIDATOR-ERROR", "where": "", "message": str(exc), "severity": "warning"}]
    return [asdict(v) for v in found]


def _intent_row(local_id: str, client: str, issue: str, name: str, where: str) -> PlannedRow:
    rec = {"client": client[:200] or "Imported", "issue": issue or name, "name": name[:200] or "Imported"}
    f = {k: _text(rec, k, where, max_length=200 if k != "issue" else None) for k in ("client", "issue", "name")}
    return PlannedRow("intent", local_id, _identity("intent", "", f), f)


def _procedure_row(local_id: str, intent: PlannedRow, title: str, text: str, apis: list[dict],
                   where: str) -> PlannedRow:
    rec = {"title": title[:300], "text": text}
    f = {"title": _text(rec, "title", where, required=False, max_length=300), "text": _text(rec, "text", where)}
    return PlannedRow("procedure", local_id, _identity("procedure", intent.key, {**f, "apis": apis}), f,
                      parent=intent.local_id, apis=apis)


def _dedupe(rows: list[PlannedRow]) -> list[PlannedRow]:
    """Identical records inside one file are one row."""
    seen: dict[str, PlannedRow] = {}
    alias: dict[str, str] = {}
    out = []
    for r in rows:
        if r.parent in alias:
            r.parent = alias[r.parent]
        if r.key in seen:
            alias[r.local_id] = seen[r.key].local_id
            continue
        seen[r.key] = r
        out.append(r)
    return out



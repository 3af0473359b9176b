"""The Hugging Face tests.jsonl: one flat row per test, its line stored when the release is frozen.

``hf_row`` is the reference rendering (a whole decoded row → the flat HF columns). Rebuilding every
row through it cost ~35 µs a row (12–25k rows/s, under bench/export.py's floor of 50,000 rows/s), so each ReleaseTest stores its HF line in
``hf_line``, written by release_freeze from the same pieces it writes the JSON row and CSV record
from (migration 0014 filled the rows frozen before). Like the CSV record, a slim row's stored line
lacks the six procedure values (intent_id … apis), and its context when the row names it by its
length; ``hf_lines`` splices them back after the three integer values, so the download streams
stored text. A row with no stored line (rows built by hand) is rendered through hf_row.
tests/datasets/test_hf_lines.py checks the stored lines equal hf_row's, over hostile text.

The stored line is derived from the row's stored values (covered by the content hash); it is not
hashed itself.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.db import connection

from curation.models import Release
from curation.releases.csv_render import CSV_COLUMNS
from curation.releases.rows import Messages, Pieces, _table, raw_rows, whole
from generation.pipeline.extract import format_api_call

HF_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


# Sorted keys: Postgres jsonb reorders keys, and a value must not depend on the database. Built
# once (json.dumps with options builds an encoder per call, which showed in release_freeze).
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode


def flat_row(d: dict[str, Any]) -> dict[str, Any]:
    """A tests.jsonl row as the released columns (CSV_COLUMNS), values in their natural types:
    the one mapping from the nested record to the flat schema (docs/datasets.md).

    expected_content is the reply's text, or for an API call the call written as `name(k=v)`
    (what tests.csv has always carried); a missing graph id is None.
    """
    exp = d["expected"]
    is_call = exp["type"] == "api_call"
    return {
        "test_id": d["test_id"], "conversation_id": d["conversation_id"], "position": d["position"],
        "intent_id": d["intent"]["id"], "intent": d["intent"]["name"], "client": d["intent"]["client"],
        "procedure_id": d["procedure"]["id"], "procedure": d["procedure"]["text"], "apis": d["apis"],
        "context": [{"role": str(m.get("role", "")), "content": str(m.get("content", ""))} for m in d["context"]],
        "expected_type": exp["type"],
        "expected_content": format_api_call(exp["name"], exp.get("parameters") or {}) if is_call else exp.get("content", ""),
        "expected_api_name": exp.get("name", "") if is_call else "",
        "expected_parameters": (exp.get("parameters") or {}) if is_call else {},
        "noise_kinds": list(d.get("noise_kinds") or []),
        "flowgraph_id": d.get("flowgraph_id"), "conversation_graph_id": d.get("conversation_graph_id"),
        "path_node_ids": list(d.get("path_node_ids") or []),
        "expected_action": d.get("expected_action") or "",
    }


def hf_row(d: dict[str, Any]) -> dict[str, Any]:
    """flat_row with the same type on every line, so pyarrow infers one schema: the columns and
    their order are tests.csv's (CSV_COLUMNS).

    Values whose shape varies between rows (API specs, call parameters, path node ids) are JSON
    strings, noise kinds comma-joined, and a missing graph id is -1.
    """
    f = flat_row(d)
    f.update(apis=_dumps(f["apis"]), expected_parameters=_dumps(f["expected_parameters"]) if f["expected_api_name"] else "{}",
             noise_kinds=",".join(f["noise_kinds"]), path_node_ids=_dumps(f["path_node_ids"]),
             flowgraph_id=-1 if f["flowgraph_id"] is None else f["flowgraph_id"],
             conversation_graph_id=-1 if f["conversation_graph_id"] is None else f["conversation_graph_id"])
    return {k: f[k] for k in CSV_COLUMNS}


def jsonb_order(value: Any) -> Any:
    """A value with its objects' keys in PostgreSQL jsonb's order (shorter keys first, then by
    bytes): what a row decoded from jsonb holds, which format_api_call and str() follow."""
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: (len(kv[0].encode()), kv[0].encode()))
        return {k: jsonb_order(v) for k, v in items}
    if isinstance(value, list):
        return [jsonb_order(v) for v in value]
    return value


# --- the stored line's pieces (each the text of some consecutive columns, without braces) -------

def _members(values: dict[str, Any]) -> str:
    return HF_ENCODE(values)[1:-1]


def hf_message(m: Any) -> str:
    return HF_ENCODE({"role": str(m.get("role", "")), "content": str(m.get("content", ""))})


def hf_context(context: list) -> str:
    return "[" + ",".join(hf_message(m) for m in context) + "]"


def hf_middle(intent: dict, procedure: dict, apis: Any) -> str:
    """intent_id … apis: the same for every test of a procedure."""
    return _members({"intent_id": intent["id"], "intent": intent["name"], "client": intent["client"],
                     "procedure_id": procedure["id"], "procedure": procedure["text"], "apis": _dumps(apis)})


def hf_expected(exp: dict[str, Any]) -> str:
    """expected_type … expected_parameters."""
    if exp["type"] == "reply":  # the common case, without building a dict
        return (f'"expected_type":"reply","expected_content":{HF_ENCODE(exp.get("content", ""))},'
                '"expected_api_name":"","expected_parameters":"{}"')
    is_call = exp["type"] == "api_call"
    name = exp.get("name", "") if is_call else ""
    params = (exp.get("parameters") or {}) if is_call else {}
    return _members({
        "expected_type": exp["type"],
        "expected_content": format_api_call(exp["name"], params) if is_call else exp.get("content", ""),
        "expected_api_name": name, "expected_parameters": _dumps(params) if name else "{}"})


def hf_graph(noise_kinds: Any, flowgraph_id: Any, conversation_graph_id: Any, path_node_ids: Any) -> str:
    """noise_kinds … path_node_ids: the same for every test of a conversation."""
    return _members({"noise_kinds": ",".join(list(noise_kinds or [])),
                     "flowgraph_id": -1 if flowgraph_id is None else flowgraph_id,
                     "conversation_graph_id": -1 if conversation_graph_id is None else conversation_graph_id,
                     "path_node_ids": _dumps(list(path_node_ids or []))})


def hf_action(action: Any) -> str:
    return _members({"expected_action": action or ""})


def hf_head(test_id: int, conversation_id: int, position: int) -> str:
    return f'{{"test_id":{int(test_id)},"conversation_id":{int(conversation_id)},"position":{int(position)},'


def slim_line(test_id: int, conversation_id: int, position: int, context: str | None, expected: str,
              graph: str, action: str) -> str:
    """A slim row's stored line (context: hf_context's text, or None when the row names it)."""
    ctx = "" if context is None else f'"context":{context},'
    return f"{hf_head(test_id, conversation_id, position)}{ctx}{expected},{graph},{action}}}"


def stored_line(d: dict[str, Any], slim: bool, named_context: bool) -> str:
    """What hf_line holds for a decoded stored row: whole (procedure_id NULL) → the whole line;
    slim → the line without the procedure's values (and the context if the row names it)."""
    if not slim:
        return HF_ENCODE(hf_row(d))
    if not all(d.get(k).__class__ is int for k in ("test_id", "conversation_id", "position")):
        return ""  # not what a freeze writes: render it through hf_row at download
    return slim_line(d["test_id"], d["conversation_id"], d["position"],
                     None if named_context else hf_context(d["context"]), hf_expected(d["expected"]),
                     hf_graph(d.get("noise_kinds"), d.get("flowgraph_id"), d.get("conversation_graph_id"),
                              d.get("path_node_ids")), hf_action(d.get("expected_action")))


def splice_line(line: str, middle: str, context: str | None) -> str:
    """A slim stored line with the procedure's values (and the context) put back after its three
    integer values."""
    i = line.find(",", line.find(",", line.find(",") + 1) + 1) + 1
    if context is None:
        return f"{line[:i]}{middle},{line[i:]}"
    return f'{line[:i]}{middle},"context":{context},{line[i:]}'


class _HfMessages(Messages):
    """The release's conversation messages, each rendered as an HF context item once per conversation."""

    def __init__(self, release: Release) -> None:
        super().__init__(release, "values")
        self.hf: list[str] = []
        self.hf_texts: dict[int, str] = {}

    def prefix(self, cid: int, k: int) -> str:  # type: ignore[override]
        if cid != self.cid:
            self._advance(cid)
            self.hf, self.hf_texts = [hf_message(m) for m in self.items], {}
        got = self.hf_texts.get(k)
        if got is None:
            got = self.hf_texts[k] = "[" + ",".join(self.hf[:k]) + "]"
        return got


class _Middles:
    def __init__(self, pieces: Pieces) -> None:
        self.pieces, self.got = pieces, {}

    def __call__(self, pid: int) -> str:
        got = self.got.get(pid)
        if got is None:
            intent, proc, apis = self.pieces.values(pid)
            got = self.got[pid] = hf_middle(intent, proc, apis)
        return got


def hf_lines(release: Release, chunk_size: int = 2000) -> Iterator[str]:
    """Every test's HF line in download order: the stored line, spliced for slim rows."""
    pieces = Pieces(release)
    middle = _Middles(pieces)
    messages = _HfMessages(release)
    loads = json.loads
    data_sql = "CAST(data AS TEXT)" if connection.vendor == "sqlite" else "data::text"
    sql = (f"SELECT procedure_id, context_len, conversation_id, hf_line, CASE WHEN hf_line = '' THEN {data_sql} END "
           f"FROM {_table()} WHERE release_id = %s ORDER BY conversation_id, position, id")
    for pid, k, cid, line, text in raw_rows(sql, [release.pk], chunk_size):
        if not line:
            data = loads(text) if isinstance(text, (str, bytes)) else text
            context = None if k is None else Messages(release, "values", [cid]).prefix(cid, k)
            yield HF_ENCODE(hf_row(whole(data, pid, pieces, context)))
        elif pid is None:
            yield line
        else:
            yield splice_line(line, middle(pid), None if k is None else messages.prefix(cid, k))

"""The Almita format: intents … conversations with tests, one record per line or in a document."""
from __future__ import annotations

from typing import Any

from generation.models import Conversation, ConversationGraph

from .common import (
    FORMAT_NAME, FORMAT_VERSION, KINDS, MAX_RECORDS, MESSAGE_ROLES, PARENTS, ImportFormatError, PlannedRow,
    _apis, _choice, _graph, _identity, _int, _no_nul, _string_list, _text, _violations,
)

def _messages(rec: dict, where: str) -> list[dict[str, str]]:
    value = rec.get("messages")
    if not isinstance(value, list) or not value:
        raise ImportFormatError(where, "messages", "must be a non-empty list")
    out = []
    for i, m in enumerate(value):
        if not isinstance(m, dict) or m.get("role") not in MESSAGE_ROLES or not isinstance(m.get("content"), str):
            raise ImportFormatError(where, f"messages[{i}]",
                                    "must be {\"role\": user|assistant|api|api_output, \"content\": string}")
        if "\x00" in m["content"]:
            raise ImportFormatError(where, f"messages[{i}].content", "contains a NUL character")
        out.append({"role": m["role"], "content": m["content"]})
    return out


def _tests(rec: dict, messages: list[dict], where: str) -> list[dict[str, Any]]:
    if "tests" not in rec or rec["tests"] is None:
        from generation.pipeline.extract import ApiCallParseError, extract_tests

        try:
            return [_norm_test(t) for t in extract_tests(messages)]
        except ApiCallParseError as exc:
            raise ImportFormatError(where, "messages", f"tests could not be extracted: {exc}") from None
    value = rec["tests"]
    if not isinstance(value, list):
        raise ImportFormatError(where, "tests", "must be a list")
    seen: set[int] = set()
    out = []
    for i, t in enumerate(value):
        tw = f"tests[{i}]"
        if not isinstance(t, dict):
            raise ImportFormatError(where, tw, "must be an object")
        pos = t.get("position")
        if isinstance(pos, bool) or not isinstance(pos, int) or not 0 < pos < len(messages):
            raise ImportFormatError(where, f"{tw}.position", f"must be an index from 1 to {len(messages) - 1}")
        if pos in seen:
            raise ImportFormatError(where, f"{tw}.position", f"position {pos} repeats")
        seen.add(pos)
        context = t.get("context", messages[:pos])
        if not isinstance(context, list) or not all(isinstance(m, dict) for m in context):
            raise ImportFormatError(where, f"{tw}.context", "must be a list of messages")
        exp = t.get("expected")
        if not isinstance(exp, dict) or exp.get("type") not in ("reply", "api_call"):
            raise ImportFormatError(where, f"{tw}.expected", "must be {\"type\": \"reply\"|\"api_call\", ...}")
        if exp["type"] == "reply":
            content = exp.get("content")
            if not isinstance(content, str):
                raise ImportFormatError(where, f"{tw}.expected.content", "must be a string")
        else:
            name, params = exp.get("name"), exp.get("parameters", {})
            if not isinstance(name, str) or not name.strip() or len(name) > 200:
                raise ImportFormatError(where, f"{tw}.expected.name", "must be a non-empty string (≤ 200)")
            if not isinstance(params, dict):
                raise ImportFormatError(where, f"{tw}.expected.parameters", "must be an object")
        test = _norm_test({"position": pos, "context": context, "expected": exp})
        _no_nul(test, where, tw)
        out.append(test)
    return sorted(out, key=lambda t: t["position"])


def _norm_test(t: dict) -> dict[str, Any]:
    exp = t["expected"]
    if exp["type"] == "reply":
        expected = {"type": "reply", "content": exp.get("content", "")}
    else:
        expected = {"type": "api_call", "name": exp["name"], "parameters": exp.get("parameters") or {}}
    return {"position": t["position"], "context": t["context"], "expected": expected}


def plan_almita(data: Any, notes: list[str] | None = None) -> list[PlannedRow]:
    """Check every record of an Almita document and return the rows to write, parents first."""
    if isinstance(data, dict):
        if data.get("format", FORMAT_NAME) != FORMAT_NAME:
            raise ImportFormatError("document", "format", f"must be '{FORMAT_NAME}'")
        version = data.get("version", FORMAT_VERSION)
        if version != FORMAT_VERSION:
            raise ImportFormatError("document", "version", f"version {version!r} is not supported (use {FORMAT_VERSION})")
        records = data.get("records")
    else:
        records = data
    if not isinstance(records, list):
        raise ImportFormatError("document", "records", "must be a list of records")
    if len(records) > MAX_RECORDS:
        raise ImportFormatError("document", "records", f"more than {MAX_RECORDS} records")

    by_id: dict[str, tuple[int, dict]] = {}
    for i, rec in enumerate(records):
        where = f"record {i + 1}"
        if not isinstance(rec, dict):
            raise ImportFormatError(where, "", "must be an object")
        kind = rec.get("kind")
        if kind not in KINDS:
            raise ImportFormatError(where, "kind", f"must be one of {', '.join(KINDS)}")
        rid = rec.get("id")
        if isinstance(rid, int) and not isinstance(rid, bool):
            rid = str(rid)
        if not isinstance(rid, str) or not rid.strip() or len(rid) > 200:
            raise ImportFormatError(where, "id", "must be a non-empty string (≤ 200 characters)")
        if rid in by_id:
            raise ImportFormatError(f"record {i + 1} ({kind} {rid})", "id", f"repeats record {by_id[rid][0] + 1}")
        by_id[rid] = (i, rec)

    planned: dict[str, PlannedRow] = {}
    graphs: dict[str, Any] = {}
    api_names: dict[str, set[str]] = {}
    ordered = sorted(by_id.items(), key=lambda kv: (KINDS.index(kv[1][1]["kind"]), kv[1][0]))
    for rid, (i, rec) in ordered:
        kind = rec["kind"]
        where = f"record {i + 1} ({kind} {rid})"
        parent_key = ""
        parent_id = None
        if PARENTS[kind]:
            pfield, pkind = PARENTS[kind]
            parent_id = _ref(rec, pfield, where)
            if parent_id not in by_id or by_id[parent_id][1]["kind"] != pkind:
                raise ImportFormatError(where, pfield, f"refers to '{parent_id}', which is not a {pkind} in this file")
            parent_key = planned[parent_id].key
        row = _plan_record(kind, rec, where, parent_key, parent_id, planned, graphs, api_names, notes)
        planned[rid] = row
    return list(planned.values())


def _ref(rec: dict, name: str, where: str) -> str:
    value = rec.get(name)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        raise ImportFormatError(where, name, "must name the id of its parent record")
    return value


def _plan_record(kind: str, rec: dict, where: str, parent_key: str, parent_id: str | None,
                 planned: dict[str, PlannedRow], graphs: dict[str, Any],
                 api_names: dict[str, set[str]], notes: list[str] | None = None) -> PlannedRow:
    rid = str(rec["id"])
    if kind == "intent":
        f = {
            "client": _text(rec, "client", where, max_length=200),
            "issue": _text(rec, "issue", where),
            "name": _text(rec, "name", where, max_length=200),
        }
        return PlannedRow(kind, rid, _identity(kind, "", f), f)
    if kind == "procedure":
        f = {"title": _text(rec, "title", where, required=False, max_length=300),
             "text": _text(rec, "text", where)}
        apis = _apis(rec.get("apis"), where, notes)
        api_names[rid] = {a["name"] for a in apis}
        return PlannedRow(kind, rid, _identity(kind, parent_key, {**f, "apis": apis}), f, parent=parent_id, apis=apis)
    if kind == "flowgraph":
        data, g = _graph(rec, "graph", where, "flowgraph")
        f = {"data": data, "text": _text(rec, "text", where, required=False)}
        graphs[rid] = g
        row = PlannedRow(kind, rid, _identity(kind, parent_key, f), f, parent=parent_id)
        row.fields["validation"] = _violations("flowgraph", g, api_names.get(parent_id or ""))
        return row
    if kind == "conversation_graph":
        data, g = _graph(rec, "graph", where, "conversation")
        rate = rec.get("noise_rate", 0.0)
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise ImportFormatError(where, "noise_rate", "must be a number from 0 to 1")
        f = {
            "mode": _choice(rec, "mode", where, ConversationGraph.Mode.values, ConversationGraph.Mode.DETERMINISTIC),
            "data": data,
            "text": _text(rec, "text", where, required=False),
            "noise_rate": float(rate),
            "noise_kinds": _string_list(rec, "noise_kinds", where),
        }
        graphs[rid] = g
        row = PlannedRow(kind, rid, _identity(kind, parent_key, f), f, parent=parent_id)
        flow_parent = planned[parent_id].parent if parent_id else None
        row.fields["validation"] = _violations("conversation", g, api_names.get(flow_parent or ""))
        return row
    if kind == "path":
        node_ids = rec.get("node_ids")
        if not isinstance(node_ids, list) or not node_ids or not all(isinstance(n, str) for n in node_ids):
            raise ImportFormatError(where, "node_ids", "must be a non-empty list of node ids")
        g = graphs[parent_id]
        for j, n in enumerate(node_ids):
            if n not in g:
                raise ImportFormatError(where, f"node_ids[{j}]", f"'{n}' is not a node of {parent_id}")
            if j and not g.has_edge(node_ids[j - 1], n):
                raise ImportFormatError(where, f"node_ids[{j}]", f"no edge {node_ids[j - 1]} → {n} in {parent_id}")
        f = {
            "node_ids": node_ids,
            "sampler": _text(rec, "sampler", where, required=False, max_length=32, default="imported") or "imported",
            "seed": _int(rec, "seed", where, 0, -(2**63), 2**63 - 1),
            "index": _int(rec, "index", where, 0, 0, 2**31 - 1),
        }
        return PlannedRow(kind, rid, _identity(kind, parent_key, f), f, parent=parent_id)
    # conversation
    path_id = rec.get("path")
    path_key = ""
    if path_id is not None:
        path_id = _ref(rec, "path", where)
        prow = planned.get(path_id)
        if prow is None or prow.kind != "path":
            raise ImportFormatError(where, "path", f"refers to '{path_id}', which is not a path in this file")
        # The path's flowgraph must belong to the same procedure.
        fg = planned[planned[prow.parent].parent]
        if fg.parent != parent_id:
            raise ImportFormatError(where, "path", f"path '{path_id}' belongs to another procedure")
        path_key = prow.key
    messages = _messages(rec, where)
    f = {
        "mode": _choice(rec, "mode", where, Conversation.Mode.values, Conversation.Mode.OFFLINE),
        "messages": messages,
        "noise_kinds": _string_list(rec, "noise_kinds", where),
    }
    tests = _tests(rec, messages, where)
    key = _identity(kind, parent_key + "|" + path_key, {**f, "tests": tests})
    return PlannedRow(kind, rid, key, f, parent=parent_id, path=path_id, tests=tests)



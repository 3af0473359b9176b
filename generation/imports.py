"""Import existing material: pipeline artifacts in the Almita JSON format, API lists, tools, workflows.

The work is split in two so an import is atomic:

1. *plan*: the file is parsed and every record is checked (types, lengths, references, graph
   and API shapes) without touching the database. The first problem raises
   :class:`ImportFormatError` naming the record and the field.
2. *write*: inside one transaction, each planned row is created under its import identity.

Import identity: every row gets ``key = "imp:" + sha256(kind, parent identity, content)``. The
file's own ids only link records together, so importing the same file twice (or the export of
an import) finds the existing rows and creates nothing new, and two files that happen to reuse
the same local ids cannot collide. The format is documented in ``docs/import-format.md``.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import IntegrityError, transaction

from generation.models import (
    Api, Conversation, ConversationGraph, Flowgraph, Intent, Origin, Procedure, SampledPath, Test,
)
from generation.pipeline.apis import ApiFormatError, ApiSpec, api_to_dict, parse_api_list
from generation.pipeline.dialogue_actions import answer_action, label_turns
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
    "flowbench": "FlowBench-style workflow(s): procedure text + Mermaid flowchart + tool list",
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
        where = record + (f", field '{field}'" if field else "")
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


# --- reading ------------------------------------------------------------------------------------

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
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ImportFormatError("document", "", f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        # Not one JSON document: try JSON Lines.
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) < 2:
            raise ImportFormatError("document", "", f"invalid JSON: {exc}") from None
        data = []
        for i, line in enumerate(lines, start=1):
            try:
                data.append(json.loads(line, parse_constant=_refuse_constant))
            except RecursionError:
                raise ImportFormatError(f"line {i}", "", "nested too deeply") from None
            except ValueError as line_exc:
                raise ImportFormatError(f"line {i}", "", f"invalid JSON: {line_exc}") from None
    _check_depth(data)
    return data


def detect_format(data: Any) -> str:
    if isinstance(data, dict):
        if data.get("format") == FORMAT_NAME or "records" in data:
            return "almita"
        if "apis" in data:
            return "apis"
        if _looks_flowbench(data):
            return "flowbench"
        if data and all(isinstance(v, dict) and "subflows" in v for v in data.values()):
            return "abcd"
        if "tools" in data:
            return "openai_tools"
    if isinstance(data, list) and data:
        first = data[0]
        if isinstance(first, dict):
            if first.get("kind") in KINDS:
                return "almita"
            if first.get("type") == "function" or ("name" in first and "parameters" in first):
                return "openai_tools"
            if _looks_flowbench(first):
                return "flowbench"
            if "name" in first:
                return "apis"
    raise ImportFormatError("document", "", "cannot tell the format; choose one explicitly")


def _looks_flowbench(d: dict) -> bool:
    return any(k in d for k in ("flowchart", "mermaid")) and any(k in d for k in ("tools", "toolbox", "apis"))


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


def _apis(items: Any, where: str) -> list[dict[str, Any]]:
    if items is None:
        return []
    try:
        specs = parse_api_list(items if isinstance(items, (list, dict)) else _bad_apis(items))
    except ApiFormatError as exc:
        raise ImportFormatError(where, "apis", str(exc)) from None
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


def _identity(kind: str, parent_key: str, content: dict[str, Any]) -> str:
    blob = json.dumps([kind, parent_key, content], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "imp:" + kind + ":" + hashlib.sha256(blob.encode()).hexdigest()


# --- planning the Almita format ---------------------------------------------------------------

def plan_almita(data: Any) -> list[PlannedRow]:
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
        where = f"record {i}"
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
            raise ImportFormatError(f"record {i} ({kind} {rid})", "id", f"repeats record {by_id[rid][0]}")
        by_id[rid] = (i, rec)

    planned: dict[str, PlannedRow] = {}
    graphs: dict[str, Any] = {}
    api_names: dict[str, set[str]] = {}
    ordered = sorted(by_id.items(), key=lambda kv: (KINDS.index(kv[1][1]["kind"]), kv[1][0]))
    for rid, (i, rec) in ordered:
        kind = rec["kind"]
        where = f"record {i} ({kind} {rid})"
        parent_key = ""
        parent_id = None
        if PARENTS[kind]:
            pfield, pkind = PARENTS[kind]
            parent_id = _ref(rec, pfield, where)
            if parent_id not in by_id or by_id[parent_id][1]["kind"] != pkind:
                raise ImportFormatError(where, pfield, f"refers to '{parent_id}', which is not a {pkind} in this file")
            parent_key = planned[parent_id].key
        row = _plan_record(kind, rec, where, parent_key, parent_id, planned, graphs, api_names)
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
                 api_names: dict[str, set[str]]) -> PlannedRow:
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
        apis = _apis(rec.get("apis"), where)
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


# --- other formats, converted to planned rows ----------------------------------------------------

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


def plan_tools(data: Any, *, name: str, procedure_text: str = "") -> list[PlannedRow]:
    """An API list (paper shape or OpenAI tools): one intent and one procedure holding the APIs."""
    where = "document"
    apis = _apis(data, where)
    if not apis:
        raise ImportFormatError(where, "apis", "the list holds no API")
    text = procedure_text.strip() or (
        f"Tools imported from {name}. Help the customer using these actions: "
        + ", ".join(a["name"] for a in apis) + "."
    )
    intent = _intent_row("intent", name, f"Requests handled with the {name} tools", name, where)
    return [intent, _procedure_row("procedure", intent, name, text, apis, where)]


def plan_flowbench(data: Any) -> tuple[list[PlannedRow], list[str]]:
    """FlowBench-style workflows: text + Mermaid flowchart + tools, via the pipeline's converter."""
    from generation.pipeline.mermaid import mermaid_to_flowgraph

    items = data if isinstance(data, list) else [data]
    rows: list[PlannedRow] = []
    notes: list[str] = []
    for i, item in enumerate(items):
        where = f"workflow {i}"
        if not isinstance(item, dict):
            raise ImportFormatError(where, "", "must be an object")
        name = next((item[k] for k in ("scenario", "name", "role", "title") if isinstance(item.get(k), str) and item[k].strip()), "")
        if not name:
            raise ImportFormatError(where, "name", "is required (or 'scenario' / 'role')")
        where = f"workflow {i} ({name[:60]})"
        text = next((item[k] for k in ("text", "procedure", "description") if isinstance(item.get(k), str)), "")
        if not text.strip():
            raise ImportFormatError(where, "text", "is required (the workflow as text, or 'procedure')")
        chart = next((item[k] for k in ("flowchart", "mermaid") if isinstance(item.get(k), str)), "")
        if not chart.strip():
            raise ImportFormatError(where, "flowchart", "is required (a Mermaid flowchart)")
        raw_tools = next((item[k] for k in ("tools", "toolbox", "apis") if k in item), None)
        try:
            specs = parse_api_list(raw_tools if raw_tools is not None else [])
        except ApiFormatError as exc:
            raise ImportFormatError(where, "tools", str(exc)) from None
        apis = _apis([api_to_dict(s) for s in specs], where)
        try:
            g, report = mermaid_to_flowgraph(chart, specs)
        except Exception as exc:  # the converter's own errors carry the line; keep them in the message
            raise ImportFormatError(where, "flowchart", f"could not be converted: {exc}") from None
        if g.number_of_nodes() == 0:
            raise ImportFormatError(where, "flowchart", "holds no node")
        notes += [f"{name}: {line}" for line in report]
        client = str(item.get("domain") or "FlowBench")
        intent = _intent_row(f"i{i}", client, str(item.get("issue") or text.strip().splitlines()[0]), name, where)
        proc = _procedure_row(f"p{i}", intent, name, text, apis, where)
        data_json = graph_to_json(g)
        f = {"data": data_json, "text": "", "validation": _violations("flowgraph", g, {a["name"] for a in apis})}
        flow = PlannedRow("flowgraph", f"f{i}", _identity("flowgraph", proc.key, {"data": data_json, "text": ""}),
                          f, parent=proc.local_id)
        rows += [intent, proc, flow]
    return _dedupe(rows), notes


_BUTTON = re.compile(r"[^a-z0-9]+")


def plan_abcd(data: Any) -> list[PlannedRow]:
    """ABCD-style guidelines: each flow is an intent, each subflow a procedure whose actions are APIs."""
    if not isinstance(data, dict) or not data:
        raise ImportFormatError("document", "", "must be an object of flows")
    rows: list[PlannedRow] = []
    for fi, (flow, body) in enumerate(data.items()):
        where = f"flow '{flow[:60]}'"
        if not isinstance(body, dict) or not isinstance(body.get("subflows"), dict):
            raise ImportFormatError(where, "subflows", "must be an object of subflows")
        intent = _intent_row(f"i{fi}", "ABCD", str(body.get("description") or flow), flow, where)
        rows.append(intent)
        for si, (sub, sbody) in enumerate(body["subflows"].items()):
            swhere = f"{where} subflow '{sub[:60]}'"
            if not isinstance(sbody, dict):
                raise ImportFormatError(swhere, "", "must be an object")
            actions = sbody.get("actions", [])
            instructions = sbody.get("instructions", [])
            if not isinstance(actions, list) or not isinstance(instructions, list):
                raise ImportFormatError(swhere, "actions", "actions and instructions must be lists")
            lines: list[str] = []
            apis: dict[str, dict] = {}
            if instructions:
                lines.append(str(instructions[0]))
            for ai, act in enumerate(actions):
                if not isinstance(act, dict) or not isinstance(act.get("text", ""), str):
                    raise ImportFormatError(swhere, f"actions[{ai}]", "must be an object with 'text'")
                sub_lines = act.get("subtext", []) or []
                if not isinstance(sub_lines, list):
                    raise ImportFormatError(swhere, f"actions[{ai}].subtext", "must be a list")
                lines.append(f"{len(lines) + (0 if instructions else 1)}. {act.get('text', '').strip()}")
                lines += [f"   - {str(s).strip()}" for s in sub_lines]
                button = act.get("button")
                if isinstance(button, str) and button.strip():
                    api_name = _BUTTON.sub("_", button.lower()).strip("_")
                    if api_name and api_name not in apis:
                        apis[api_name] = {"name": api_name, "desc": f"{act.get('type', 'action')}: {button}",
                                          "params": [], "output": {"name": "result", "type": "dict"}}
            lines += [str(x) for x in instructions[1:]]
            text = "\n".join(lines).strip() or sub
            rows.append(_procedure_row(f"p{fi}.{si}", intent, f"{flow}: {sub}", text,
                                       _apis(list(apis.values()), swhere), swhere))
    return _dedupe(rows)


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


# --- writing ------------------------------------------------------------------------------------

MODELS = {
    "intent": Intent, "procedure": Procedure, "flowgraph": Flowgraph,
    "conversation_graph": ConversationGraph, "path": SampledPath, "conversation": Conversation,
}
PARENT_FIELD = {
    "procedure": "intent", "flowgraph": "procedure", "conversation_graph": "flowgraph",
    "path": "conversation_graph", "conversation": "procedure",
}
LABELS = {
    "intent": "intents", "procedure": "procedures", "api": "APIs", "flowgraph": "flowgraphs",
    "conversation_graph": "conversation graphs", "path": "paths", "conversation": "conversations",
    "test": "tests",
}


def plan_document(raw: bytes | str, *, fmt: str = "auto", name: str = "imported",
                  procedure_text: str = "") -> tuple[str, list[PlannedRow], list[str]]:
    if fmt not in FORMATS:
        raise ImportFormatError("document", "format", f"unknown format '{fmt}'")
    data = load_document(raw)
    if fmt == "auto":
        fmt = detect_format(data)
    notes: list[str] = []
    if fmt == "almita":
        rows = plan_almita(data)
    elif fmt in ("apis", "openai_tools"):
        rows = plan_tools(data, name=name, procedure_text=procedure_text)
    elif fmt == "flowbench":
        rows, notes = plan_flowbench(data)
    else:
        rows = plan_abcd(data)
    if not rows:
        raise ImportFormatError("document", "records", "the file holds no record")
    return fmt, rows, notes


@transaction.atomic
def items_import(*, raw: bytes | str, fmt: str = "auto", name: str = "imported",
                 procedure_text: str = "") -> ImportResult:
    """Import one file atomically; raise ImportFormatError (nothing written) when it is refused."""
    fmt, rows, notes = plan_document(raw, fmt=fmt, name=name, procedure_text=procedure_text)
    result = ImportResult(format=fmt, notes=notes)
    created = {k: 0 for k in LABELS}
    existing = {k: 0 for k in LABELS}
    objects: dict[str, Any] = {}
    for row in rows:
        model = MODELS[row.kind]
        obj = model.objects.filter(job__isnull=True, key=row.key).first()
        if obj is not None:
            existing[row.kind] += 1
            objects[row.local_id] = obj
            continue
        fields = dict(row.fields)
        if row.parent is not None:
            fields[PARENT_FIELD[row.kind]] = objects[row.parent]
        if row.kind == "conversation" and row.path is not None:
            fields["path"] = objects[row.path]
        obj = model(origin=Origin.IMPORTED, key=row.key, **fields)
        try:
            with transaction.atomic():
                obj.save()
        except IntegrityError as exc:
            raise ImportFormatError(f"{row.kind} {row.local_id}", "", f"conflicts with existing data: {exc}") from None
        objects[row.local_id] = obj
        created[row.kind] += 1
        if row.kind == "procedure":
            created["api"] += _write_apis(obj, row)
        elif row.kind == "conversation":
            created["test"] += _write_tests(obj, row)
    result.created = {LABELS[k]: n for k, n in created.items()}
    result.existing = {LABELS[k]: n for k, n in existing.items() if n}
    return result


def _write_apis(procedure: Procedure, row: PlannedRow) -> int:
    objs = []
    for d in row.apis:
        spec = ApiSpec.from_dict(d)
        objs.append(Api(
            procedure=procedure, origin=Origin.IMPORTED, key=f"{row.key}:api:{spec.name}"[:200],
            name=spec.name, description=spec.description,
            parameters=[{"name": p.name, "type": p.type, "required": p.required, "description": p.description}
                        for p in spec.params],
            output_name=spec.output_name, output_type=spec.output_type,
        ))
    # Keys must fit the column: hash them when the procedure key plus the name is too long.
    for o in objs:
        if len(f"{row.key}:api:{o.name}") > 200:
            o.key = "imp:api:" + hashlib.sha256(f"{row.key}:{o.name}".encode()).hexdigest()
    Api.objects.bulk_create(objs)
    return len(objs)


def _write_tests(conversation: Conversation, row: PlannedRow) -> int:
    objs = []
    for t in row.tests:
        exp = t["expected"]
        objs.append(Test(
            conversation=conversation, origin=Origin.IMPORTED,
            key="imp:test:" + hashlib.sha256(f"{row.key}:{t['position']}".encode()).hexdigest(),
            position=t["position"], context=t["context"], expected_type=exp["type"],
            expected_text=exp.get("content", "") if exp["type"] == "reply" else "",
            expected_api_name=exp.get("name", "") if exp["type"] == "api_call" else "",
            expected_parameters=exp.get("parameters", {}) if exp["type"] == "api_call" else {},
            action=answer_action(t["context"], exp),
        ))
    Test.objects.bulk_create(objs)
    Conversation.objects.filter(pk=conversation.pk).update(turn_actions=label_turns(conversation.messages or []))
    return len(objs)


# --- export in the same format ------------------------------------------------------------------

def api_row_to_dict(api: Api) -> dict[str, Any]:
    return {
        "name": api.name, "desc": api.description,
        "params": [{"name": p.get("name", ""), "type": p.get("type", "str"), "required": bool(p.get("required", True)),
                    "description": p.get("description", "")} for p in api.parameters],
        "output": {"name": api.output_name, "type": api.output_type},
    }


def test_row_to_dict(test: Test) -> dict[str, Any]:
    return {"position": test.position, "context": test.context, "expected": test.expected}


def record_id(kind: str, pk: int) -> str:
    return f"{kind}-{pk}"


def intent_record(o: Intent) -> dict[str, Any]:
    return {"kind": "intent", "id": record_id("intent", o.pk), "client": o.client, "issue": o.issue, "name": o.name}


def procedure_record(o: Procedure, apis: list[Api]) -> dict[str, Any]:
    return {"kind": "procedure", "id": record_id("procedure", o.pk), "intent": record_id("intent", o.intent_id),
            "title": o.title, "text": o.text, "apis": [api_row_to_dict(a) for a in sorted(apis, key=lambda a: a.pk)]}


def flowgraph_record(o: Flowgraph) -> dict[str, Any]:
    return {"kind": "flowgraph", "id": record_id("flowgraph", o.pk), "procedure": record_id("procedure", o.procedure_id),
            "graph": o.data, "text": o.text}


def conversation_graph_record(o: ConversationGraph) -> dict[str, Any]:
    return {"kind": "conversation_graph", "id": record_id("conversation_graph", o.pk),
            "flowgraph": record_id("flowgraph", o.flowgraph_id), "mode": o.mode, "graph": o.data, "text": o.text,
            "noise_rate": o.noise_rate, "noise_kinds": o.noise_kinds}


def path_record(o: SampledPath) -> dict[str, Any]:
    return {"kind": "path", "id": record_id("path", o.pk),
            "conversation_graph": record_id("conversation_graph", o.conversation_graph_id),
            "node_ids": o.node_ids, "sampler": o.sampler, "seed": o.seed, "index": o.index}


def conversation_record(o: Conversation, tests: Iterable[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": "conversation", "id": record_id("conversation", o.pk),
            "procedure": record_id("procedure", o.procedure_id),
            "path": record_id("path", o.path_id) if o.path_id else None,
            "mode": o.mode, "messages": o.messages, "noise_kinds": o.noise_kinds, "tests": list(tests)}

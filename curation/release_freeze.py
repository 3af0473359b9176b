"""Freezing a release's tests and records: set-based reads, one encoding per row, multi-row inserts.

release_create used to walk the selection 500 conversations at a time, with a query for the
conversations, one for their APIs and one for their tests per batch, and encoded every row twice
(once for the content hash, once more inside the ORM's insert). Now:

* the lineage (procedures with intents, APIs, paths, conversation graphs, flowgraphs) is read
  once, each table in one query selected by a subquery of the tests;
* conversations and tests stream in two ordered queries, merged in Python, as plain values;
* each test row is encoded once to its canonical JSON, built from pieces cached per procedure
  and per conversation (a conversation's contexts are prefixes of each other); that text feeds
  the content hash and is inserted as it is (multi-row INSERTs, the backend's largest batch).

The query count does not depend on the number of tests apart from the inserts (one per batch of
rows). The hash covers the same bytes in the same order as before, so release_verify is unchanged.
"""
from __future__ import annotations

import io
import json
from collections import Counter, defaultdict
from itertools import groupby
from types import SimpleNamespace
from typing import Any

from django.db import connection

from curation.csv_render import _ENCODE, CsvLineMaker
from curation.models import Release, ReleaseRecord, ReleaseTest
from generation.imports import (
    api_row_to_dict, conversation_graph_record, conversation_record, flowgraph_record, intent_record, path_record,
    procedure_record,
)
from generation.models import Api, Conversation, ConversationGraph, Flowgraph, Procedure, SampledPath

CHUNK = 500  # conversations per hash batch (release_verify reads records back per batch)
NO_NOISE = "none"

# Compact JSON, sorted keys, non-ASCII kept (what releases.canonical hashes), from a C encoder
# built once: json.dumps builds one per call, which dominated for small values.
canonical_text = _ENCODE


TEST_KEYS = sorted(("test_id", "conversation_id", "position", "intent", "procedure", "apis", "context", "expected",
                    "expected_action", "noise_kinds", "conversation_mode", "path_id", "path_node_ids",
                    "conversation_graph_id", "flowgraph_id", "job_id"))


def expected_of(kind: str, text: str, api_name: str, params: Any) -> dict[str, Any]:
    if kind == "api_call":
        return {"type": "api_call", "name": api_name, "parameters": params}
    return {"type": "reply", "content": text}


class _Insert:
    """Pre-encoded rows written in bulk; JSON columns take the canonical text as it is.

    PostgreSQL: COPY … FROM STDIN (one statement per flush, no SQL literal to parse for ~8 KB of
    text per row). Other backends: multi-row INSERTs, as many rows as the parameter limit allows.
    COPY goes through psycopg2's copy_expert, which Django's query log does not record.
    """

    def __init__(self, model, columns: list[str]) -> None:
        self.table = connection.ops.quote_name(model._meta.db_table)
        self.columns = columns
        self.names = ", ".join(connection.ops.quote_name(c) for c in columns)
        self.copy = connection.vendor == "postgresql"
        self.row_sql = "(" + ", ".join("%s" for _ in columns) + ")"
        fields = [model._meta.get_field(c) for c in columns]
        # The backend's limit on parameters per statement (SQLite), at most 1,000 rows.
        self.per_statement = max(1, min(1000, connection.ops.bulk_batch_size(fields, range(100_000))))
        if self.copy:
            self.per_statement = 5000
        self.pending: list[tuple] = []

    def add(self, row: tuple) -> None:
        self.pending.append(row)
        if len(self.pending) >= self.per_statement:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        with connection.cursor() as cursor:
            if self.copy:
                buf = io.StringIO()
                buf.writelines("\t".join(_copy_field(v) for v in row) + "\n" for row in self.pending)
                buf.seek(0)
                cursor.copy_expert(f"COPY {self.table} ({self.names}) FROM STDIN", buf)
            else:
                cursor.execute(f"INSERT INTO {self.table} ({self.names}) VALUES "
                               + ", ".join([self.row_sql] * len(self.pending)),
                               [v for row in self.pending for v in row])
        self.pending = []


def _copy_field(value: Any) -> str:
    """One field of COPY's text format (no NULLs are written here)."""
    if value.__class__ is not str:
        return str(value)
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _lineage(tests_qs) -> dict[str, Any]:
    """Every supporting object of the selected tests, one query per table."""
    conv_ids = tests_qs.order_by().values("conversation_id")
    convs = Conversation.objects.filter(pk__in=conv_ids).order_by()
    path_qs = SampledPath.objects.filter(pk__in=convs.values("path_id")).order_by()
    graph_qs = ConversationGraph.objects.filter(pk__in=path_qs.values("conversation_graph_id")).order_by()
    paths = {p.pk: p for p in path_qs}
    graphs = {g.pk: g for g in graph_qs.defer("svg")}
    flowgraphs = {f.pk: f for f in Flowgraph.objects.filter(pk__in=graph_qs.values("flowgraph_id")).defer("svg")}
    procs = {p.pk: p for p in Procedure.objects.filter(pk__in=convs.values("procedure_id")).select_related("intent")}
    apis: dict[int, list[dict]] = {pid: [] for pid in procs}
    for api in Api.objects.filter(procedure_id__in=convs.values("procedure_id")).order_by("pk"):
        apis[api.procedure_id].append(api_row_to_dict(api))
    return {"paths": paths, "graphs": graphs, "flowgraphs": flowgraphs, "procs": procs, "apis": apis}


class _Pieces:
    """Encoded JSON values shared by many test rows (per procedure; per conversation)."""

    def __init__(self, lineage: dict[str, Any]) -> None:
        self.lineage = lineage
        self.proc: dict[int, dict[str, str]] = {}

    def of_procedure(self, pid: int) -> dict[str, str]:
        got = self.proc.get(pid)
        if got is None:
            proc = self.lineage["procs"][pid]
            intent = proc.intent
            got = self.proc[pid] = {
                "intent": canonical_text({"id": intent.pk, "client": intent.client, "issue": intent.issue,
                                          "name": intent.name}),
                "procedure": canonical_text({"id": proc.pk, "title": proc.title, "text": proc.text}),
                "apis": canonical_text(self.lineage["apis"][pid]),
            }
        return got


def freeze(release: Release, tests_qs, digest) -> dict[str, Any]:
    """Write the release's ReleaseTest and ReleaseRecord rows; return the manifest's statistics."""
    lin = _lineage(tests_qs)
    pieces = _Pieces(lin)
    procs, paths, graphs, flowgraphs, apis = lin["procs"], lin["paths"], lin["graphs"], lin["flowgraphs"], lin["apis"]
    tests_out = _Insert(ReleaseTest, ["release_id", "test_id", "conversation_id", "position", "data", "csv_line"])
    records_out = _Insert(ReleaseRecord, ["release_id", "kind", "object_id", "data"])
    conv_rows = Conversation.objects.filter(pk__in=tests_qs.order_by().values("conversation_id")).order_by(
        "pk").values_list("pk", "procedure_id", "path_id", "noise_kinds", "mode", "job_id", "messages").iterator(
        chunk_size=CHUNK)
    test_rows = tests_qs.order_by("conversation_id", "position").values_list(
        "pk", "conversation_id", "position", "context", "expected_type", "expected_text", "expected_api_name",
        "expected_parameters", "action", "job_id").iterator(chunk_size=2000)
    seen: dict[str, set[int]] = defaultdict(set)
    csv_line = CsvLineMaker()
    jobs: set[int] = set()
    counts: Counter = Counter()
    noise: Counter = Counter()
    expected_types: Counter = Counter()
    records: list[tuple[str, int, str]] = []
    rid = release.pk
    n_convs = 0
    for cid, group in groupby(test_rows, key=lambda r: r[1]):
        c_pk, pid, path_id, noise_kinds, mode, conv_job, messages = next(conv_rows)
        assert c_pk == cid, (c_pk, cid)  # both streams are ordered by conversation id
        proc, path = procs[pid], paths.get(path_id)
        cg = graphs[path.conversation_graph_id] if path is not None else None
        lineage = [("intent", proc.intent, intent_record),
                   ("procedure", proc, lambda o: {**procedure_record(o, []), "apis": apis[o.pk]})]
        if path is not None:
            lineage += [("flowgraph", flowgraphs[cg.flowgraph_id], flowgraph_record),
                        ("conversation_graph", cg, conversation_graph_record), ("path", path, path_record)]
        for kind, obj, to_record in lineage:
            if obj.pk not in seen[kind]:
                seen[kind].add(obj.pk)
                records.append((kind, obj.pk, canonical_text(to_record(obj))))
                if getattr(obj, "job_id", None):
                    jobs.add(obj.job_id)
        shared = pieces.of_procedure(pid)
        noise_list = list(noise_kinds or [])
        fixed = {
            "conversation_id": str(cid), "conversation_mode": canonical_text(mode),
            "noise_kinds": canonical_text(noise_list),
            "path_id": canonical_text(path.pk if path else None),
            "path_node_ids": canonical_text(list(path.node_ids) if path else []),
            "conversation_graph_id": canonical_text(cg.pk if cg else None),
            "flowgraph_id": canonical_text(cg.flowgraph_id if cg else None), **shared,
        }
        intent_d, proc_d = json.loads(shared["intent"]), json.loads(shared["procedure"])
        path_d = {"path_id": path.pk if path else None, "path_node_ids": list(path.node_ids) if path else [],
                  "conversation_graph_id": cg.pk if cg else None, "flowgraph_id": cg.flowgraph_id if cg else None}
        frozen_tests = []
        for t_pk, _cid, position, context, etype, etext, ename, eparams, action, t_job in group:
            expected = expected_of(etype, etext, ename, eparams)
            job = t_job or conv_job
            row = {"test_id": t_pk, "conversation_id": cid, "position": position, "intent": intent_d,
                   "procedure": proc_d, "apis": apis[pid], "context": context, "expected": expected,
                   "expected_action": action, "noise_kinds": noise_list, "conversation_mode": mode, **path_d,
                   "job_id": job}
            line = csv_line(row)  # also leaves the context's canonical JSON in csv_line.context
            ctx_text, exp_text, pos = csv_line.context, canonical_text(expected), str(position)
            parts = {**fixed, "test_id": str(t_pk), "position": pos, "context": ctx_text, "expected": exp_text,
                     "expected_action": canonical_text(action), "job_id": "null" if job is None else str(job)}
            text = "{" + ",".join([f'"{k}":{parts[k]}' for k in TEST_KEYS]) + "}"
            digest.update(text.encode())
            digest.update(b"\n")
            tests_out.add((rid, t_pk, cid, position, text, line))
            frozen_tests.append(f'{{"context":{ctx_text},"expected":{exp_text},"position":{pos}}}')
            expected_types[etype] += 1
            counts["tests"] += 1
            if t_job:
                jobs.add(t_job)
        conv = SimpleNamespace(pk=cid, procedure_id=pid, path_id=path_id, mode=mode, messages=messages,
                               noise_kinds=noise_kinds)
        head = canonical_text(conversation_record(conv, []))  # "tests" sorts last: splice the tests in
        assert head.endswith(',"tests":[]}')
        records.append(("conversation", cid, head[:-3] + "[" + ",".join(frozen_tests) + "]}"))
        seen["conversation"].add(cid)
        if conv_job:
            jobs.add(conv_job)
        for k in noise_list:
            noise[k] += 1
        if not noise_list:
            noise[NO_NOISE] += 1
        n_convs += 1
        if n_convs % CHUNK == 0:
            _flush_records(records, records_out, rid, digest, tests_out)
    _flush_records(records, records_out, rid, digest, tests_out)
    for kind, ids in seen.items():
        counts[kind + "s"] = len(ids)
    counts["procedures_with_apis"] = sum(1 for pid in seen["procedure"] if apis.get(pid))
    return {"counts": dict(counts), "noise": dict(noise), "expected_types": dict(expected_types),
            "jobs": sorted(jobs)}


def _flush_records(records: list, records_out: _Insert, rid: int, digest, tests_out: _Insert) -> None:
    """End of a hash batch: the batch's records follow its tests, in insertion (id) order."""
    for kind, object_id, text in records:
        digest.update(f'["{kind}",{text}]'.encode())
        digest.update(b"\n")
        records_out.add((rid, kind, object_id, text))
    records.clear()
    tests_out.flush()
    records_out.flush()

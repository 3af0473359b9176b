"""Freezing a release (storage format 2, read back by curation.releases.rows).

* The lineage (procedures with intents, APIs, paths, conversation graphs, flowgraphs) is read
  once, each table in one query selected by a subquery of the tests; conversations and tests
  stream in two ordered queries, merged in Python, as plain database text.
* Per test only what is per test is stored: the slim row's canonical JSON (no "intent",
  "procedure", "apis": the release's procedure and intent records hold them once) and its CSV
  record without the six procedure cells. A context that is the first k messages of its
  conversation (compared as the database's text) is stored as k (context_len) and comes back
  from the conversation record, which no longer repeats its tests. Other contexts stay in the
  row, encoded from their new messages only.
* The rows are written in bulk by curation.releases.writer while the next batch is built. The
  query count does not depend on the number of tests.
* The content hash covers, per test, the procedure id, context length, stored JSON text and CSV
  record (test_hash_line), then each batch's records: every stored value that reaches an output.
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from itertools import groupby
from types import SimpleNamespace
from typing import Any

from curation.models import Release, ReleaseRecord, ReleaseTest
from curation.releases.csv_render import _ENCODE, _cell
from curation.releases.hf import hf_action, hf_context, hf_expected, hf_graph, jsonb_order
from curation.releases.writer import Writer, copy_json, copy_line, copy_text
from generation.imports import (
    api_row_to_dict,
    conversation_graph_record,
    conversation_record,
    flowgraph_record,
    intent_record,
    path_record,
    procedure_record,
)
from generation.models import Api, Conversation, ConversationGraph, Flowgraph, Procedure, SampledPath
from generation.pipeline.audit import findings_for_test
from generation.pipeline.extract import format_api_call

CHUNK = 500  # conversations per hash batch (release_verify reads records back per batch)
FLUSH_ROWS = 5000  # tests per background write (and per read of the tests)
NULL = "\\N"  # COPY's text format
NO_NOISE = "none"

# Compact JSON, sorted keys, non-ASCII kept (what releases.canonical hashes), from a C encoder
# built once: json.dumps builds one per call, which dominated for small values.
canonical_text = _ENCODE


def _lineage(tests_qs) -> dict[str, Any]:
    """Every supporting object of the selected tests, one query per table."""
    conv_ids = tests_qs.order_by().values("conversation_id")
    convs = Conversation.objects.filter(pk__in=conv_ids).order_by()
    path_qs = SampledPath.objects.filter(pk__in=convs.values("path_id")).order_by()
    graph_qs = ConversationGraph.objects.filter(pk__in=path_qs.values("conversation_graph_id")).order_by()
    # Paths as plain values (one per conversation: model instances cost more than the rest here).
    fields = ("pk", "conversation_graph_id", "node_ids", "sampler", "seed", "index")
    paths = {v[0]: SimpleNamespace(**dict(zip(fields, v))) for v in path_qs.values_list(*fields)}
    graphs = {g.pk: g for g in graph_qs.defer("svg")}
    flowgraphs = {f.pk: f for f in Flowgraph.objects.filter(pk__in=graph_qs.values("flowgraph_id")).defer("svg")}
    procs = {p.pk: p for p in Procedure.objects.filter(pk__in=convs.values("procedure_id")).select_related("intent")}
    apis: dict[int, list[dict]] = {pid: [] for pid in procs}
    for api in Api.objects.filter(procedure_id__in=convs.values("procedure_id")).order_by("pk"):
        apis[api.procedure_id].append(api_row_to_dict(api))
    return {"paths": paths, "graphs": graphs, "flowgraphs": flowgraphs, "procs": procs, "apis": apis}


def freeze(release: Release, tests_qs, digest, auditor: Any = None) -> dict[str, Any]:
    """Write the release's ReleaseTest (format 2) and ReleaseRecord rows; return the manifest's statistics.

    ``auditor`` (curation.releases.audit.LineageAudit, an automatic release): each conversation is
    audited as it is read and the tests its findings fail are left out (counted in
    ``auditor.left_out``); a conversation left without tests is not frozen at all."""
    lin = _lineage(tests_qs)
    writer = Writer()
    try:
        return _freeze(release, tests_qs, digest, lin, writer, auditor)
    finally:
        writer.thread and writer.thread.join()  # never leave a write running on the connection


def _freeze(release: Release, tests_qs, digest, lin: dict[str, Any], writer: Writer,
            auditor: Any) -> dict[str, Any]:
    procs, paths, graphs, flowgraphs, apis = lin["procs"], lin["paths"], lin["graphs"], lin["flowgraphs"], lin["apis"]
    tests_out = writer.table(ReleaseTest, ["release_id", "test_id", "conversation_id", "position", "procedure_id",
                                           "context_len", "data", "csv_line", "hf_line"])
    records_out = writer.table(ReleaseRecord, ["release_id", "kind", "object_id", "data"])
    pg = writer.pg
    conv_rows = writer.reader(Conversation.objects.filter(pk__in=tests_qs.order_by().values("conversation_id")).order_by(
        "pk").values_list("pk", "procedure_id", "path_id", "noise_kinds", "mode", "job_id", "messages"), CHUNK)
    test_rows = writer.reader(tests_qs.order_by("conversation_id", "position").values_list(
        "pk", "conversation_id", "position", "context", "expected_type", "expected_text", "expected_api_name",
        "expected_parameters", "action", "job_id"), FLUSH_ROWS)
    seen: dict[str, set[int]] = defaultdict(set)
    graph_paths: dict[int, list[list[str]]] = {pk: [] for pk in graphs}  # the release card's coverage
    jobs: set[int] = set()
    counts: Counter = Counter()
    noise: Counter = Counter()
    expected_types: Counter = Counter()
    records: list[tuple[str, int, str]] = []
    rid = release.pk
    n_convs = 0
    enc, update = _ENCODE, digest.update
    expected: dict[tuple, tuple[str, str]] = {}  # (JSON, CSV cells) of recent expected outputs
    actions: dict[str, tuple[str, str]] = {}
    pending: list[tuple] = []
    # The HF line's values as a row decoded from this database holds them (PostgreSQL: jsonb's key order).
    order = jsonb_order if pg else (lambda v: v)
    for cid, group in groupby(test_rows, key=lambda r: r[1]):
        c_pk, pid, path_id, noise_raw, mode, conv_job, messages = next(conv_rows)
        assert c_pk == cid, (c_pk, cid)  # both streams are ordered by conversation id
        proc, path = procs[pid], paths.get(path_id)
        cg = graphs[path.conversation_graph_id] if path is not None else None
        # The messages' items are decoded once: for their ends (contexts stored as a length), the
        # conversation record and the audit.
        items, prefixes = _scan_items(messages)
        if auditor is not None:
            found = auditor.conversation(cid, pid, apis[pid], cg, path.node_ids if path else None,
                                         _json(messages) if items is None else items)
            group = list(group)
            kept = [t for t in group if not findings_for_test(found, t[2])] if found else group
            auditor.left_out += len(group) - len(kept)
            if not kept:
                continue
            group = kept
            auditor.pairs += [(cid, t[2]) for t in kept]
        noise_list = list(_json(noise_raw) or [])
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
        nodes = list(path.node_ids) if path else []
        if path is not None:
            graph_paths[cg.pk].append([str(n) for n in nodes])
        noise_text, nodes_text = enc(noise_list), enc(nodes)
        # The slim row's text around its per-test values (keys in canonical order, see release_rows).
        fg = cg.flowgraph_id if cg else None
        after_exp = f',"conversation_graph_id":{enc(cg.pk if cg else None)},"conversation_id":{cid},' \
                    f'"conversation_mode":{enc(mode)},"expected":'
        after_fg = f',"flowgraph_id":{enc(fg)},"job_id":'
        after_pos = f',"noise_kinds":{noise_text},"path_id":{enc(path.pk if path else None)},' \
                    f'"path_node_ids":{nodes_text},"position":'
        csv_conv = ",".join((_cell(",".join(noise_list)) if noise_list else "", "" if fg is None else str(fg),
                             "" if cg is None else str(cg.pk), _cell(" ".join(nodes)) if nodes else ""))
        hf_conv = hf_graph(noise_list, fg, cg.pk if cg else None, nodes)
        # Readers cut the slim text at its last ,"job_id": key (release_rows.splice_text): what
        # follows it are numbers and these two lists, whose items are strings (the CSV record
        # joins them: anything else fails here, as it did in format 1), so none can hold one.
        ctx = _Context()
        n_tests = 0
        # A context that is the first k messages of the conversation is stored as k alone.
        head_exp = "{" + after_exp[1:]
        for t_pk, _cid, position, context_raw, etype, etext, ename, eparams_raw, action, t_job in group:
            k = context_len(messages, prefixes, context_raw) if context_raw.__class__ is str else None
            key = (etype, etext, ename, eparams_raw)
            exp = expected.get(key)
            if exp is None:
                exp = _expected(etype, etext, ename, eparams_raw)
                value = {"content": etext, "type": "reply"} if etype == "reply" else order(_SCAN(exp[0], 0)[0])
                exp = expected[key] = (*exp, hf_expected(value))
                if len(expected) > 10_000:
                    expected.clear()
            act = actions.get(action)
            if act is None:
                act = actions[action] = (enc(action), _cell(action or ""), hf_action(action))
            job = t_job or conv_job
            hf_rest = f"{exp[2]},{hf_conv},{act[2]}}}"
            rest = (f'{exp[0]},"expected_action":{act[0]}{after_fg}'
                    f'{"null" if job is None else job}{after_pos}{position},"test_id":{t_pk}}}')
            if k is None:
                ctx_text, ctx_cell = ctx.next(context_raw)
                text = f'{{"context":{ctx_text}{after_exp}{rest}'
                line = f"{t_pk},{cid},{position},{ctx_cell},{exp[1]},{csv_conv},{act[1]}"
                try:
                    hf_ctx = f'"context":{hf_context(order(_SCAN(ctx_text, 0)[0]))},'
                    hf = f'{{"test_id":{t_pk},"conversation_id":{cid},"position":{position},{hf_ctx}{hf_rest}'
                except (AttributeError, TypeError):  # not messages: the download renders it (and fails as before)
                    hf = ""
            else:
                text = head_exp + rest
                line = f"{t_pk},{cid},{position},{exp[1]},{csv_conv},{act[1]}"
                hf = f'{{"test_id":{t_pk},"conversation_id":{cid},"position":{position},{hf_rest}'
            # What the content hash covers of a test: every stored value that reaches an output.
            update(test_hash_line(pid, k, text, line))
            pending.append(f"{rid}\t{t_pk}\t{cid}\t{position}\t{pid}\t{NULL if k is None else k}\t"
                           f"{copy_json(text)}\t{copy_text(line)}\t{copy_text(hf)}\n"
                           if pg else (rid, t_pk, cid, position, pid, k, text, line, hf))
            n_tests += 1
            expected_types[etype] += 1
            if t_job:
                jobs.add(t_job)
        if len(pending) >= FLUSH_ROWS:
            tests_out.pending, pending = pending, []
            writer.flush()
        counts["tests"] += n_tests
        conv = SimpleNamespace(pk=cid, procedure_id=pid, path_id=path_id, mode=mode,
                               messages=_json(messages) if items is None else items,
                               noise_kinds=_json(noise_raw))
        # Format 2: the record's "tests" stay empty; release_rows.records fills them from the rows.
        records.append(("conversation", cid, canonical_text(conversation_record(conv, []))))
        seen["conversation"].add(cid)
        if conv_job:
            jobs.add(conv_job)
        for k in noise_list:
            noise[k] += 1
        if not noise_list:
            noise[NO_NOISE] += 1
        n_convs += 1
        if n_convs % CHUNK == 0:
            _hash_records(records, records_out, rid, digest, pg)
    _hash_records(records, records_out, rid, digest, pg)
    tests_out.pending += pending
    writer.close()
    for kind, ids in seen.items():
        counts[kind + "s"] = len(ids)
    counts["procedures_with_apis"] = sum(1 for pid in seen["procedure"] if apis.get(pid))
    # Not in the manifest: what the card's coverage section reads (graphs by id, node paths per graph).
    coverage = ([graphs[pk] for pk in sorted(graphs) if pk in seen["conversation_graph"]], graph_paths)
    return {"counts": dict(counts), "noise": dict(noise), "expected_types": dict(expected_types),
            "jobs": sorted(jobs), "coverage": coverage}


def test_hash_line(pid: int | None, context_len: int | None, text: str, line: str) -> bytes:
    """What the content hash covers of one format-2 test: every stored value that reaches an output
    (the procedure and the number of messages it names, its JSON text, its CSV record, whose length
    keeps rows apart)."""
    return (f"{'' if pid is None else pid}\t{'' if context_len is None else context_len}\t{text}\t"
            f"{len(line)}\t{line}\n").encode()


def context_len(messages: Any, prefixes: dict[int, int] | None, context_raw: str) -> int | None:
    """k when the context's text is the messages' text of their first k items (prefixes: the
    messages' item ends from _scan_items), else None: the context is stored whole."""
    if prefixes is None:
        return None
    k = 0 if context_raw == "[]" else prefixes.get(len(context_raw) - 1)
    if k and not (context_raw[-1] == "]" and messages.startswith(context_raw[:-1])):
        return None
    return k


def _scan_items(raw: Any) -> tuple[list | None, dict[int, int] | None]:
    """(the array's items, or None unless raw is a whole array's text; {n: k}: raw[:n] followed
    by "]" is the database's text of the array's first k items, or None: not an array's text).
    Each item is decoded once, for both."""
    out: dict[int, int] = {}
    items: list = []
    if raw.__class__ is not str or not raw.startswith("["):
        return None, None
    i, k, n = 1, 0, len(raw)
    while True:
        while i < n and raw[i] in " \t\n\r":
            i += 1
        if i >= n or raw[i] == "]":
            return (items if i < n and k == 0 else None), out  # "[]"; after a comma: not JSON
        try:
            item, i = _SCAN(raw, i)
        except (ValueError, StopIteration):
            return None, None
        items.append(item)
        k += 1
        out[i] = k
        while i < n and raw[i] in " \t\n\r":
            i += 1
        if i < n and raw[i] == ",":
            i += 1
        else:
            return (items if i < n and raw[i] == "]" else None), out


_SCAN = json.JSONDecoder().scan_once  # the C scanner without json.loads's per-call checks


def _json(raw: Any) -> Any:
    """A JSON column's value from the raw cursor (text on every backend Django configures)."""
    if isinstance(raw, str):
        return _SCAN(raw.strip(), 0)[0] if raw else json.loads(raw)
    return json.loads(raw) if isinstance(raw, bytes) else raw


def _expected(etype: str, etext: str, ename: str, eparams_raw: Any) -> tuple[str, str]:
    """A test's expected output as canonical JSON and as its four CSV cells (as CsvLineMaker)."""
    if etype == "api_call":
        params = _json(eparams_raw)
        text = f'{{"name":{_ENCODE(ename)},"parameters":{_ENCODE(params)},"type":"api_call"}}'
        params = params or {}
        return text, f"api_call,{_cell(format_api_call(ename, params))},{_cell(ename)},{_cell(_ENCODE(params))}"
    return f'{{"content":{_ENCODE(etext)},"type":"reply"}}', f"reply,{_cell(etext)},,"


class _Context:
    """One conversation's contexts, in position order: canonical JSON and its CSV cell.

    Each context usually extends the previous one, and the database's text of it then starts with
    the previous text (without its closing bracket) and a comma: only the new messages are
    decoded and encoded, so every message costs once per conversation, not once per test.
    """

    def __init__(self) -> None:
        self.raw, self.text, self.escaped = "", "[]", "[]"

    def next(self, raw: Any) -> tuple[str, str]:
        prev, n = self.raw, len(self.raw)
        if isinstance(raw, str) and n > 2 and len(raw) > n and raw[n - 1] == "," and raw.startswith(prev[:-1]):
            new = _SCAN("[" + raw[n:], 0)[0]
            tail = "," + _ENCODE(new)[1:] if new else "]"
            self.text = self.text[:-1] + tail
            self.escaped = self.escaped[:-1] + tail.replace('"', '""')
        elif raw != prev or not isinstance(raw, str):
            self.text = _ENCODE(_json(raw))
            self.escaped = self.text.replace('"', '""')
        self.raw = raw if isinstance(raw, str) else ""
        # A JSON array never starts a formula; it needs quotes once it holds a string or a comma.
        if len(self.escaped) == len(self.text) and "," not in self.text:
            return self.text, self.escaped
        return self.text, '"' + self.escaped + '"'


def _hash_records(records: list, records_out, rid: int, digest, pg: bool) -> None:
    """End of a hash batch: the batch's records follow its tests, in insertion (id) order."""
    for kind, object_id, text in records:
        digest.update(f'["{kind}",{text}]\n'.encode())
        records_out.pending.append(copy_line((rid, kind, object_id, text)) if pg else (rid, kind, object_id, text))
    records.clear()

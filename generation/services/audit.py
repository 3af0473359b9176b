"""The fidelity audit (generation.pipeline.audit) over live rows: the conversations of a set of
tests, with their paths, conversation graphs and procedures' APIs, read in batches."""
from __future__ import annotations

from typing import Any

from generation.models import Api, Conversation, ConversationGraph, SampledPath
from generation.pipeline.apis import ApiSpec, ParamSpec
from generation.pipeline.audit import Finding, audit_conversation, findings_for_test
from generation.pipeline.formats import graph_from_json

BATCH = 500


def specs_from_rows(rows: list[dict[str, Any]]) -> list[ApiSpec]:
    """ApiSpecs from API dicts as releases and rows hold them (params/parameters, outputs)."""
    out = []
    for a in rows:
        if not isinstance(a, dict):
            continue
        params = a.get("params", a.get("parameters")) or []
        out.append(ApiSpec(
            name=a.get("name", ""), description=a.get("desc", a.get("description", "")) or "",
            params=[ParamSpec.from_dict({"name": "", **p}) for p in params if isinstance(p, dict)],
            output_name=(a.get("output") or {}).get("name", "result") if isinstance(a.get("output"), dict)
            else a.get("output_name", "result"),
            output_type=(a.get("output") or {}).get("type", "dict") if isinstance(a.get("output"), dict)
            else a.get("output_type", "dict"),
            outputs=[ParamSpec.from_dict({"name": "", **o}) for o in a.get("outputs") or [] if isinstance(o, dict)],
        ))
    return out


def _specs(procedure_ids: set[int]) -> dict[int, list[ApiSpec]]:
    rows: dict[int, list[dict]] = {pid: [] for pid in procedure_ids}
    for a in Api.objects.filter(procedure_id__in=procedure_ids).order_by("id").values(
            "procedure_id", "name", "description", "parameters", "output_name", "output_type", "outputs"):
        rows[a["procedure_id"]].append(a)
    return {pid: specs_from_rows(r) for pid, r in rows.items()}


def audit_tests(tests_qs, memo: dict[int, list[Finding]] | None = None) -> dict[int, list[Finding]]:
    """{test id: the findings that make it fail} for the tests of ``tests_qs`` that fail the audit.

    ``memo``, when given, receives every audited conversation's findings by conversation id."""
    failing: dict[int, list[Finding]] = {}
    conv_ids = list(tests_qs.order_by().values_list("conversation_id", flat=True).distinct())
    specs: dict[int, list[ApiSpec]] = {}
    for start in range(0, len(conv_ids), BATCH):
        batch = conv_ids[start:start + BATCH]
        convs = list(Conversation.objects.filter(pk__in=batch).values("pk", "procedure_id", "path_id", "messages"))
        paths = {p["pk"]: p for p in SampledPath.objects.filter(pk__in=[c["path_id"] for c in convs if c["path_id"]])
                 .values("pk", "node_ids", "conversation_graph_id")}
        graph_data = dict(ConversationGraph.objects.filter(
            pk__in={p["conversation_graph_id"] for p in paths.values()}).values_list("pk", "data"))
        missing = {c["procedure_id"] for c in convs} - specs.keys()  # a procedure spans batches
        specs.update(_specs(missing) if missing else {})
        graphs: dict[int, Any] = {}
        found: dict[int, list[Finding]] = {}
        for c in convs:
            path = paths.get(c["path_id"])
            graph = None
            if path is not None:
                cg = path["conversation_graph_id"]
                if cg not in graphs:
                    graphs[cg] = graph_from_json(graph_data[cg])
                graph = graphs[cg]
            found[c["pk"]] = audit_conversation(c["messages"] or [], specs[c["procedure_id"]], graph,
                                                path["node_ids"] if path else None)
        if memo is not None:
            memo.update(found)
        for tid, cid, pos in tests_qs.filter(conversation_id__in=batch).values_list("pk", "conversation_id",
                                                                                     "position"):
            bad = findings_for_test(found.get(cid, []), pos)
            if bad:
                failing[tid] = bad
    return failing

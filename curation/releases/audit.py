"""The fidelity audit of a release (issue #28): every frozen test judged by
generation.pipeline.audit — outcome vs branch, argument values vs schema and dialogue, speech
artefacts — from the release's own records (the procedure's APIs, the conversation graph, the
path and the conversation as frozen), so the audit describes exactly what was published.

:func:`release_audit` returns the report stored on ``Release.audit`` and shown on the release page
and the dataset card: counts per kind, and the first findings with the test they fail.
"""
from __future__ import annotations

from typing import Any

from curation.models import Release
from curation.releases.rows import records
from generation.pipeline.audit import KINDS, Finding, audit_conversation, findings_for_test, summary
from generation.imports import record_id
from generation.pipeline.formats import graph_from_json
from generation.services.audit import specs_from_rows

SHOWN = 50  # findings kept in the report


def record_pk(record_id: str) -> int | None:
    """The row id of a record id such as "conversation-12" (None for anything else)."""
    _, _, pk = str(record_id).rpartition("-")
    return int(pk) if pk.isdigit() else None


def _graph(raw: Any) -> Any:
    try:
        return graph_from_json(raw)
    except (ValueError, KeyError, TypeError):
        return None  # an unreadable graph decides no outcome


class Parsed:
    __slots__ = ("graph",)

    def __init__(self, graph: Any) -> None:
        self.graph = graph


class LineageAudit:
    """The audit of live conversations as the freeze reads them (issue #29: an automatic release
    judges each conversation once, inside the freeze, instead of reading the selection twice).
    generation.services.audit.audit_tests is the plain implementation it must agree with (tested)."""

    def __init__(self) -> None:
        self.specs: dict[int, list] = {}
        self.graphs: dict[int, Any] = {}
        self.found: dict[int, list[Finding]] = {}  # by conversation id: release_audit's ``known``
        self.pairs: list[tuple[int, int]] = []  # (conversation, position) of every kept test
        self.left_out = 0

    def conversation(self, cid: int, procedure_id: int, apis: list[dict], graph_row: Any, node_ids: Any,
                     messages: Any) -> list[Finding]:
        """The findings of one conversation (``apis``: its procedure's API dicts; ``graph_row``: its
        ConversationGraph, or None without a path), kept by conversation id."""
        specs = self.specs.get(procedure_id)
        if specs is None:
            specs = self.specs[procedure_id] = specs_from_rows(apis)
        graph = None
        if graph_row is not None:
            graph = self.graphs.get(graph_row.pk)
            if graph is None:
                graph = self.graphs[graph_row.pk] = graph_from_json(graph_row.data)
        found = self.found[cid] = audit_conversation(messages or [], specs, graph, node_ids)
        return found


def _report_from_known(release: Release, known: dict[int, list[Finding]],
                       pairs: Any = None) -> dict[str, Any] | None:
    """The report from findings already made, when they cover every frozen conversation: the frozen
    tests' (conversation, position) pairs are all it needs, not the records' text (``pairs``: those
    the freeze kept, in its order; else read from the frozen rows)."""
    per_test: list[list] = []
    shown: list[dict[str, Any]] = []
    conversations: set[int] = set()
    if pairs is None:
        pairs = release.entries.order_by("conversation_id", "position").values_list(
            "conversation_id", "position").iterator(chunk_size=5000)
    for conversation_id, position in pairs:
        found = known.get(conversation_id)
        if found is None:
            return None
        if conversation_id not in conversations:
            conversations.add(conversation_id)
            listed: set = set()
        bad = findings_for_test(found, int(position))
        per_test.append(bad)
        for f in bad:
            if f not in listed and len(shown) < SHOWN:
                listed.add(f)
                shown.append({"conversation": record_id("conversation", conversation_id), "position": position, **f.to_dict()})
    report = summary(per_test)
    report["conversations"] = len(conversations)
    report["findings"] = shown
    report["left_out"] = (release.audit or {}).get("left_out", 0)
    return report


def release_audit(release: Release, known: dict[int, list[Finding]] | None = None,
                  pairs: Any = None) -> dict[str, Any]:
    """The report of ``release``. ``known``: findings by conversation id already computed from the
    same rows in the same transaction (an automatic release audits its selection before freezing
    it); those conversations are not audited twice. Without it (``manage.py audit_release``, curated
    releases) everything is read from the frozen records alone; a test checks both agree."""
    if known:
        report = _report_from_known(release, known, pairs)
        if report is not None:
            return report
    specs: dict[str, list] = {}
    graphs: dict[str, Any] = {}
    paths: dict[str, tuple[str, list]] = {}
    per_test: list[list] = []
    shown: list[dict[str, Any]] = []
    conversations = 0
    for rec in records(release, ["procedure", "conversation_graph", "path", "conversation"]):
        kind = rec.get("kind")
        if kind == "procedure":
            specs[rec["id"]] = specs_from_rows(rec.get("apis") or [])  # cheap: a few APIs a procedure
        elif kind == "conversation_graph":
            graphs[rec["id"]] = rec.get("graph")  # parsed when a conversation needs it
        elif kind == "path":
            paths[rec["id"]] = (rec["conversation_graph"], list(rec.get("node_ids") or []))
        elif kind == "conversation":
            conversations += 1
            found = known.get(record_pk(rec["id"])) if known else None
            if found is None:
                cg_id, node_ids = paths.get(rec.get("path") or "", (None, None))
                if cg_id in graphs and not isinstance(graphs[cg_id], Parsed):
                    graphs[cg_id] = Parsed(_graph(graphs[cg_id]))
                graph = graphs[cg_id].graph if cg_id in graphs else None
                found = audit_conversation(rec.get("messages") or [], specs.get(rec.get("procedure"), []),
                                           graph, node_ids)
            listed: set = set()
            for test in rec.get("tests") or []:
                bad = findings_for_test(found, int(test["position"]))
                per_test.append(bad)
                for f in bad:  # each finding once, with the first test it fails
                    if f not in listed and len(shown) < SHOWN:
                        listed.add(f)
                        shown.append({"conversation": rec["id"], "position": test["position"], **f.to_dict()})
    report = summary(per_test)
    report["conversations"] = conversations
    report["findings"] = shown
    report["left_out"] = (release.audit or {}).get("left_out", 0)
    return report


def card_lines(report: dict[str, Any]) -> list[str]:
    """The dataset card's section on the audit."""
    if not report:
        return []
    lines = ["## Fidelity audit", "",
             f"{report['tests'] - report['failed']} of {report['tests']} tests pass the audit "
             f"({report['failed']} fail).", "",
             "| Check | Tests failing | Findings |", "|---|---|---|"]
    names = {"outcome": "API output vs the branch taken", "value": "Argument values vs schema and dialogue",
             "speech": "Speech artefacts in assistant turns"}
    for kind in KINDS:
        lines.append(f"| {names[kind]} | {report['failed_by_kind'][kind]} | {report['findings_by_kind'][kind]} |")
    if report.get("left_out"):
        lines += ["", f"{report['left_out']} tests that failed the audit were left out of this automatic release."]
    return lines + [""]

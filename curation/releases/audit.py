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
from generation.pipeline.audit import KINDS, audit_conversation, findings_for_test, summary
from generation.pipeline.formats import graph_from_json
from generation.services.audit import specs_from_rows

SHOWN = 50  # findings kept in the report


def release_audit(release: Release) -> dict[str, Any]:
    specs: dict[str, list] = {}
    graphs: dict[str, Any] = {}
    paths: dict[str, tuple[str, list]] = {}
    per_test: list[list] = []
    shown: list[dict[str, Any]] = []
    conversations = 0
    for rec in records(release, ["procedure", "conversation_graph", "path", "conversation"]):
        kind = rec.get("kind")
        if kind == "procedure":
            specs[rec["id"]] = specs_from_rows(rec.get("apis") or [])
        elif kind == "conversation_graph":
            try:
                graphs[rec["id"]] = graph_from_json(rec["graph"])
            except (ValueError, KeyError, TypeError):
                graphs[rec["id"]] = None  # an unreadable graph decides no outcome
        elif kind == "path":
            paths[rec["id"]] = (rec["conversation_graph"], list(rec.get("node_ids") or []))
        elif kind == "conversation":
            conversations += 1
            cg_id, node_ids = paths.get(rec.get("path") or "", (None, None))
            found = audit_conversation(rec.get("messages") or [], specs.get(rec.get("procedure"), []),
                                       graphs.get(cg_id), node_ids)
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

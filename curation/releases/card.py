"""What a frozen release says about itself: its manifest and its dataset card (Markdown).

Split out of curation.releases.services: release_create calls these once, after the tests are frozen.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

from django.db.models import Count

from curation.models import Release, ReviewStage
from curation.releases.exports import CSV_COLUMNS
from generation.models import (
    Conversation,
    ConversationGraph,
    CurationStatus,
    Discard,
    Flowgraph,
    Intent,
    LLMCall,
    Procedure,
    Stage,
    Test,
)


def release_manifest(release: Release, stats: dict) -> dict[str, Any]:
    return {
        "name": release.name,
        "version": release.version,
        "kind": release.kind,
        "filters": release.filters,
        "created_at": release.created_at.isoformat(),
        "created_by": release.created_by.get_username() if release.created_by else None,
        "licence": release.licence,
        "content_hash": {"algorithm": "sha256", "value": release.content_hash,
                         "covers": "canonical JSON of every test row, then of every record, per batch"},
        "counts": stats["counts"],
        "noise_kinds": stats["noise"],
        "expected_types": stats["expected_types"],
        "jobs": stats["jobs"],
        "files": {
            "tests.csv": "ALMITA-style CSV, one row per test",
            "tests.jsonl": "one self-contained test per line",
            "conversations.jsonl": "conversation records with their tests (import format)",
            "graphs.jsonl": "flowgraph, conversation graph and path records (import format)",
            "procedures.jsonl": "intent and procedure-with-APIs records (import format)",
            "README.md": "this dataset card",
            "manifest.json": "this manifest",
        },
        "format": {"name": "almita", "version": 1},
        "csv_lines": True,
        "csv_columns": len(CSV_COLUMNS),
    }


# --- the dataset card ----------------------------------------------------------------------------


def review_policy_line(release: Release) -> str:
    """Which stages people reviewed in the release's project; the others counted as accepted."""
    project = release.project
    reviewed = [s for s in ReviewStage.values if project.reviews_stage(s)]
    skipped = [s for s in ReviewStage.values if s not in reviewed]
    names = lambda stages: ", ".join(s.replace("_", " ") for s in stages) or "none"  # noqa: E731
    line = f"- Reviewed stages: {names(reviewed)}"
    if skipped:
        line += f"; not reviewed in this project, so accepted by policy: {names(skipped)}"
    return line

FUNNEL_COLUMNS = [
    ("Intents", Stage.INTENTS), ("Proc.", Stage.PROCEDURES), ("Proc. w/ APIs", Stage.APIS),
    ("Flowgraphs", Stage.FLOWGRAPH), ("Conv. Graphs", Stage.CONVERSATION_GRAPH),
    ("Conversations", Stage.CONVERSATIONS), ("Tests", Stage.TESTS),
]


def funnel(release: Release, stats: dict) -> list[tuple[str, list[int]]]:
    """Paper Table 1 rows for the jobs in the release's scope (all data when not filtered by job)."""
    jobs = release.filters.get("jobs")

    def scoped(qs, job_field="job_id"):
        return qs.filter(**{f"{job_field}__in": jobs}) if jobs else qs

    querysets = {
        Stage.INTENTS: scoped(Intent.objects.all()),
        Stage.PROCEDURES: scoped(Procedure.objects.all()),
        Stage.APIS: scoped(Procedure.objects.filter(apis__isnull=False).distinct()),
        Stage.FLOWGRAPH: scoped(Flowgraph.objects.all()),
        Stage.CONVERSATION_GRAPH: scoped(ConversationGraph.objects.all()),
        Stage.CONVERSATIONS: scoped(Conversation.objects.all()),
        Stage.TESTS: scoped(Test.objects.all()),
    }
    discards = Counter(dict(scoped(Discard.objects.all()).values_list("stage").annotate(n=Count("id"))))
    present = {s: qs.count() for s, qs in querysets.items()}
    accepted = {s: qs.filter(status=CurationStatus.ACCEPTED).count() for s, qs in querysets.items()}
    # Intents are not reviewed themselves (their status stays pending): one passes the manual
    # filters when a procedure written for it was accepted, as the release counts it.
    accepted[Stage.INTENTS] = querysets[Stage.INTENTS].filter(
        procedures__status=CurationStatus.ACCEPTED).distinct().count()
    c = stats["counts"]
    in_release = [c.get("intents", 0), c.get("procedures", 0), c.get("procedures_with_apis", 0),
                  c.get("flowgraphs", 0), c.get("conversation_graphs", 0), c.get("conversations", 0),
                  c.get("tests", 0)]
    stages = [s for _, s in FUNNEL_COLUMNS]
    return [
        ("Generated", [present[s] + discards.get(s, 0) for s in stages]),
        ("+ auto. filters", [present[s] for s in stages]),
        ("+ man. filters", [accepted[s] for s in stages]),
        (f"{release.name} v{release.version}", in_release),
    ]


def agreement_by_stage() -> dict[str, dict[str, Any]]:
    """Agreement figures per review stage, from the curation services (percent, Cohen's κ, α)."""
    from curation.agreement.services import agreement_by_stage as figures

    out = {}
    for stage, f in figures().items():
        a = f["overall"]
        out[stage] = {
            "items": a["percent"]["n"], "percent": a["percent"]["value"], "kappa": a["kappa"]["value"],
            "alpha": a["alpha"]["value"], "note": a["kappa"]["explanation"] or a["percent"]["explanation"],
        }
    return out


def generators(jobs: Iterable[int]) -> list[dict[str, Any]]:
    rows = (LLMCall.objects.filter(job_id__in=list(jobs)).values("stage", "model", "template", "template_version")
            .annotate(calls=Count("id")).order_by("stage", "model", "template"))
    return list(rows)


def _fmt(v: float | None, pct: bool = False) -> str:
    if v is None:
        return "–"
    return f"{v * 100:.1f}%" if pct else f"{v:.3f}"


def release_card(release: Release, stats: dict) -> str:
    c = stats["counts"]
    lines = [
        f"# {release.name} v{release.version}", "",
        f"{release.get_kind_display()} release created {release.created_at:%Y-%m-%d %H:%M} UTC"
        + (f" by {release.created_by.get_username()}" if release.created_by else "") + ".", "",
        f"- Project: {release.project.name} (`{release.project.slug}`)",
        review_policy_line(release),
        f"- Licence: {release.licence}",
        f"- Content hash (sha256): `{release.content_hash}`",
        f"- Filters: `{json.dumps(release.filters, sort_keys=True)}`",
        f"- Tests: {c.get('tests', 0)} in {c.get('conversations', 0)} conversations "
        f"({stats['expected_types'].get('reply', 0)} replies, {stats['expected_types'].get('api_call', 0)} API calls)",
        f"- Procedures: {c.get('procedures', 0)} ({c.get('procedures_with_apis', 0)} with APIs) from "
        f"{c.get('intents', 0)} intents; flowgraphs: {c.get('flowgraphs', 0)}; conversation graphs: "
        f"{c.get('conversation_graphs', 0)}", "",
        "## Funnel (paper Table 1)", "",
        "| | " + " | ".join(col for col, _ in FUNNEL_COLUMNS) + " |",
        "|---|" + "---|" * len(FUNNEL_COLUMNS),
    ]
    for label, values in funnel(release, stats):
        lines.append(f"| {label} | " + " | ".join(f"{v:,}" for v in values) + " |")
    lines += ["", "Generated = rows plus items discarded by automatic filters; the last row is this release.", "",
              "## Agreement per review stage", "",
              "| Stage | Review pairs | Percent agreement | Cohen's κ | Krippendorff's α |", "|---|---|---|---|---|"]
    for stage, a in agreement_by_stage().items():
        lines.append(f"| {ReviewStage(stage).label} | {a['items']} | {_fmt(a['percent'], True)} | {_fmt(a['kappa'])} "
                     f"| {_fmt(a['alpha'])} |")
    lines += ["", "Computed by the curation services over every completed review item in the studio at release "
              "time (not only the items in this release).", "",
              "## Noise kinds", ""]
    lines += [f"- {k}: {n} conversations" for k, n in sorted(stats["noise"].items())] or ["- none"]
    lines += ["", "## Generator models and prompt versions", ""]
    gens = generators(stats["jobs"])
    if gens:
        lines += ["| Stage | Model | Prompt | Version | Calls |", "|---|---|---|---|---|"]
        lines += [f"| {g['stage']} | {g['model']} | {g['template'] or '–'} | {g['template_version'] or '–'} | {g['calls']} |"
                  for g in gens]
    else:
        lines.append("No LLM call is recorded for these items (imported or deterministic).")
    lines += ["", f"Jobs: {', '.join(map(str, stats['jobs'])) or 'none (imported items)'}", ""]
    from curation.loop.services import card_lines  # i15: coverage and economics

    lines += card_lines(release, stats.get("coverage"))
    lines += ["## Files", "",
              "- `tests.csv`: ALMITA-style, one row per test", "- `tests.jsonl`: self-contained tests",
              "- `conversations.jsonl`, `graphs.jsonl`, `procedures.jsonl`: records in the Almita import format",
              "  (`python manage.py import_items` reads them back)", ""]
    return "\n".join(lines)

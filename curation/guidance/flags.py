"""Flags: a reason (and optional comment) on one node, edge or turn of the item under review.

Flags travel with the verdict (the review form posts them as JSON), are checked against the
item's own graph and turns, and are stored per review. A rejection may consist of flags alone:
their reasons become the review's reason codes.
"""
from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from django.db import transaction
from django.utils import timezone

from curation.guidance.guidelines import OTHER, current_guide, reason_code_set
from curation.models import Flag, FlagKind, Review, ReviewItem, ReviewMeta, ReviewStage, Verdict, flags_text  # noqa: F401
from curation.reviews import services
from generation.pipeline.formats import GraphFormatError, graph_from_json

MAX_FLAGS = 200
MAX_COMMENT = 1000


def edge_key(source: Any, target: Any) -> str:
    return f"{source}->{target}"


def flag_graph(item: ReviewItem, artifact=None) -> dict | None:
    """The graph data flags of `item` point into (None for procedures and graph-less conversations)."""
    artifact = artifact if artifact is not None else services.artifact_for(item)
    if artifact is None:
        return None
    if item.stage in (ReviewStage.FLOWGRAPH, ReviewStage.CONVERSATION_GRAPH):
        return artifact.data
    if item.stage == ReviewStage.CONVERSATION and artifact.path_id:
        return artifact.path.conversation_graph.data
    return None


def targets(item: ReviewItem, artifact=None) -> dict[str, set[str]]:
    """Every flaggable target of the item, by kind."""
    artifact = artifact if artifact is not None else services.artifact_for(item)
    out: dict[str, set[str]] = {FlagKind.NODE: set(), FlagKind.EDGE: set(), FlagKind.TURN: set()}
    data = flag_graph(item, artifact)
    if data:
        try:
            g = graph_from_json(data)
        except GraphFormatError:
            g = None
        if g is not None:
            out[FlagKind.NODE] = {str(n) for n in g.nodes}
            out[FlagKind.EDGE] = {edge_key(u, v) for u, v in g.edges}
    if item.stage == ReviewStage.CONVERSATION and artifact is not None:
        out[FlagKind.TURN] = {str(i) for i in range(len(artifact.messages or []))}
    return out


def align_turns(messages: list[dict], path: list, node_types: dict[str, str]) -> list[str | None]:
    """The path node each message realises (None when no node matches).

    Conversations do not store which node produced a turn, so turns are matched to the path in
    order by role: a user turn to the next user node, an assistant turn to the next assistant
    node, an api call to the next api node; an api_output belongs to the call before it. The
    greeting node a conversation skips (it opens with the customer) is passed over.
    """
    out: list[str | None] = []
    p = 0
    last_api: str | None = None
    for m in messages:
        role = m.get("role") if isinstance(m, dict) else None
        if role == "api_output":
            out.append(last_api)
            continue
        match = None
        # Look a couple of nodes ahead: a skipped greeting or an added opening line shifts the pairs.
        for ahead in range(p, min(p + 3, len(path))):
            if node_types.get(str(path[ahead])) == role:
                match = str(path[ahead])
                p = ahead + 1
                break
        if role == "api":
            last_api = match
        out.append(match)
    return out


def clean_flags(raw: Any, *, stage: str, allowed: dict[str, set[str]]) -> list[dict[str, str]]:
    """Validated flags from the form's JSON; raises CurationError naming the bad entry."""
    if raw in (None, "", []):
        return []
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise services.CurationError("The flags could not be read (not JSON).") from None
    if not isinstance(raw, list):
        raise services.CurationError("The flags must be a list.")
    if len(raw) > MAX_FLAGS:
        raise services.CurationError(f"At most {MAX_FLAGS} flags per review.")
    codes = reason_code_set(stage)
    out: list[dict[str, str]] = []
    seen: set[tuple[str, str, str]] = set()
    for i, f in enumerate(raw, start=1):
        if not isinstance(f, dict):
            raise services.CurationError(f"Flag {i}: expected an object.")
        kind, target, reason = (str(f.get(k, "")) for k in ("kind", "target", "reason"))
        comment = str(f.get("comment") or "").strip()
        if kind not in FlagKind.values:
            raise services.CurationError(f"Flag {i}: kind must be node, edge or turn.")
        if target not in allowed.get(kind, set()):
            raise services.CurationError(f"Flag {i}: this item has no {kind} {target[:60]!r}.")
        if reason not in codes:
            raise services.CurationError(f"Flag {i}: unknown reason code {reason[:60]!r} for this stage.")
        if reason == OTHER and not comment:
            raise services.CurationError(f"Flag {i}: reason OTHER needs a comment.")
        if len(comment) > MAX_COMMENT:
            raise services.CurationError(f"Flag {i}: the comment is longer than {MAX_COMMENT} characters.")
        if (kind, target, reason) in seen:
            continue
        seen.add((kind, target, reason))
        out.append({"kind": kind, "target": target, "reason": reason, "comment": comment})
    return out


@transaction.atomic
def review_submit_flagged(*, annotator, item_id: int, verdict: str, reason_codes: list[str] | None = None,
                          comment: str = "", flags: Any = None) -> Review:
    """services.review_submit plus the review's flags, time spent and guideline version."""
    clean: list[dict[str, str]] = []
    if flags not in (None, "", [], "[]"):  # most verdicts carry none: no graph to load and parse then
        item = ReviewItem.objects.filter(pk=item_id).first()
        if item is None:
            raise services.CurationError("No such review item.")
        clean = clean_flags(flags, stage=item.stage, allowed=targets(item))
    codes = list(dict.fromkeys(reason_codes or []))
    if verdict == Verdict.REJECT:
        # A rejection may consist of flags alone: their reasons are the review's reasons.
        codes += [f["reason"] for f in clean if f["reason"] not in codes]
        if OTHER in codes and not comment.strip():
            comment = "; ".join(f"{f['kind']} {f['target']}: {f['comment']}" for f in clean if f["reason"] == OTHER)
    review = services.review_submit_within(annotator=annotator, item_id=item_id, verdict=verdict,
                                           reason_codes=codes, comment=comment)
    if clean:
        Flag.objects.bulk_create([Flag(review=review, **f) for f in clean])
    seconds = None
    if review.claimed_at is not None:  # when the claim the verdict closed was taken
        seconds = max(0, int((timezone.now() - review.claimed_at).total_seconds()))
    ReviewMeta.objects.create(review=review, seconds=seconds, guideline_version=current_guide(review.item.stage)[1])
    return review


def flags_of(reviews) -> dict[int, list[Flag]]:
    by_review: dict[int, list[Flag]] = defaultdict(list)
    for f in Flag.objects.filter(review__in=list(reviews)).order_by("id"):
        by_review[f.review_id].append(f)
    return by_review


def combined(reviews: list[Review], labels: list[str]) -> dict[str, Any]:
    """Both annotators' flags on one drawing: per target, who flagged it and with what.

    Returns {"targets": [{kind, target, label, by: [[reasons of reviewer 0], [of 1], ...], agree}],
    "marks": {"node": {id: "a"|"b"|"both"}, ...}} for the page and its script.
    """
    by_review = flags_of(reviews)
    rows: dict[tuple[str, str], list[list[Flag]]] = {}
    for idx, review in enumerate(reviews):
        for f in by_review.get(review.pk, []):
            rows.setdefault((f.kind, f.target), [[] for _ in reviews])[idx].append(f)
    out = []
    marks: dict[str, dict[str, str]] = {k: {} for k in FlagKind.values}
    for (kind, target), per in sorted(rows.items(), key=lambda kv: (kv[0][0], _sort_key(kv[0][1]))):
        flagged_by = [i for i, fl in enumerate(per) if fl]
        mark = "both" if len(flagged_by) > 1 else "ab"[flagged_by[0]] if flagged_by[0] < 2 else "b"
        marks[kind][target] = mark
        out.append({"kind": kind, "target": target, "label": per[flagged_by[0]][0].label, "by": per,
                    "mark": mark, "agree": len(flagged_by) == len(reviews) and len(reviews) > 1})
    return {"targets": out, "marks": marks, "labels": labels}


def _sort_key(target: str):
    return (0, int(target), "") if target.isdigit() else (1, 0, target)


def review_page_extras(item: ReviewItem, ctx: dict[str, Any], own_review: Review | None) -> dict[str, Any]:
    """What the review page's flag panel needs (added to views.review's context)."""
    from curation.guidance.guidelines import human_codes

    return {
        "human_codes": human_codes(item.stage),
        # A drawing still being made by the worker is flaggable too: it arrives while the page is open.
        "flaggable": bool(ctx.get("turns")) or any(g.get("flaggable") and (g.get("svg") or g.get("pending"))
                                                   for g in ctx.get("graphs", [])),
        "own_flags": list(own_review.flags.all()) if own_review is not None else [],
        # Drawn on the graph and turns of the read-only page, as annotator 1's marks.
        "own_marks": combined([own_review], ["you"])["marks"] if own_review is not None else {},
    }


def combined_for_page(reviews: list[Review], show_names: bool) -> dict[str, Any]:
    """combined() with the adjudication page's labels (names only when asked for)."""
    labels = [r.annotator.username if show_names else f"Annotator {i}" for i, r in enumerate(reviews, start=1)]
    return combined(reviews, labels)

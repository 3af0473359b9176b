"""Read-only curation figures: the stage funnel, per-annotator progress, agreement, the verdict table.

Agreement and the verdict table use complete items only (every required review submitted), so
they never reveal a verdict to someone who could still review the item.
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

from django.db import connection
from django.db.models import Count, Q
from django.utils import timezone

from curation.agreement.stages import agreement_by_stage, agreement_for_stage  # noqa: F401  (aggregated in SQL)
from curation.models import Claim, Flag, ItemState, Review, ReviewItem, ReviewStage, Skip, Verdict, flags_text
from curation.releases.services import plain_rows
from curation.reviews.services import Effective, assignment_progress, count_candidates, effective_q

COMPLETE_STATES = (ItemState.DISAGREEMENT, ItemState.DECIDED)


def stage_funnel() -> list[dict[str, Any]]:
    """Per stage: review items by effective state (curation.reviews.state), in one grouped query.

    Every item is in exactly one effective state, so the columns add up to "items".
    """
    open_ = effective_q(Effective.OPEN)
    rows = {
        r["stage"]: r
        for r in ReviewItem.objects.order_by().values("stage").annotate(
            items=Count("pk"),
            unreviewed=Count("pk", filter=open_ & Q(review_count=0)),
            partial=Count("pk", filter=open_ & Q(review_count__gt=0)),
            disagreement=Count("pk", filter=effective_q(Effective.AWAITING)),
            accepted=Count("pk", filter=effective_q(Effective.ACCEPTED)),
            rejected=Count("pk", filter=effective_q(Effective.REJECTED)),
            n_excluded=Count("pk", filter=effective_q(Effective.EXCLUDED)),
            n_warnings=Count("pk", filter=Q(has_warnings=True)),
        )
    }
    out = []
    for stage, label in ReviewStage.choices:
        r = rows.get(stage, {})
        items = r.get("items", 0)
        decided = r.get("accepted", 0) + r.get("rejected", 0)
        live = items - r.get("n_excluded", 0)
        out.append({
            "stage": stage, "label": label,
            "items": items, "unreviewed": r.get("unreviewed", 0), "partial": r.get("partial", 0),
            "disagreement": r.get("disagreement", 0), "accepted": r.get("accepted", 0),
            "rejected": r.get("rejected", 0), "excluded": r.get("n_excluded", 0), "warnings": r.get("n_warnings", 0),
            "decided": decided, "percent_decided": round(100 * decided / live) if live else 0,
        })
    return out


def annotator_available(*, annotator) -> dict[str, int]:
    """Per stage, how many items this annotator could take now: the only queue figure an annotator
    sees, since it moves with their own work and never with another annotator's verdict."""

    now = timezone.now()
    return {stage: count_candidates(stage=stage, annotator_id=annotator.pk, now=now, cap=AVAILABLE_CAP)
            for stage in ReviewStage.values}


AVAILABLE_CAP = 100  # the queue page shows "100+" beyond this


def annotator_progress(*, annotator=None) -> list[dict[str, Any]]:
    """Reviews, accepts, rejects, skips, held claims and assigned / done per annotator and stage."""
    reviews = Review.objects.all()
    skips = Skip.objects.all()
    claims = Claim.objects.filter(effective_q(Effective.OPEN, prefix="item__"), expires_at__gt=timezone.now())
    if annotator is not None:
        reviews, skips, claims = (qs.filter(annotator=annotator) for qs in (reviews, skips, claims))
    table: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"reviews": 0, "accepts": 0, "rejects": 0, "skips": 0, "claims": 0, "assigned": 0, "assigned_done": 0})
    # Items assigned to them (active or done) and done (#30): their own work, never another's verdict.
    for key, vals in assignment_progress(annotator=annotator).items():
        table[key].update(vals)
    for r in reviews.values("annotator__username", "item__stage").annotate(
        n=Count("pk"), acc=Count("pk", filter=Q(verdict=Verdict.ACCEPT)), rej=Count("pk", filter=Q(verdict=Verdict.REJECT))
    ):
        row = table[(r["annotator__username"], r["item__stage"])]
        row.update(reviews=r["n"], accepts=r["acc"], rejects=r["rej"])
    for r in skips.values("annotator__username", "item__stage").annotate(n=Count("pk")):
        table[(r["annotator__username"], r["item__stage"])]["skips"] = r["n"]
    for r in claims.values("annotator__username", "item__stage").annotate(n=Count("pk")):
        table[(r["annotator__username"], r["item__stage"])]["claims"] = r["n"]
    labels = dict(ReviewStage.choices)
    order = {s: i for i, s in enumerate(ReviewStage.values)}
    return [
        {"annotator": user, "stage": stage, "stage_label": labels.get(stage, stage), **vals}
        for (user, stage), vals in sorted(table.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 9)))
    ]


VERDICT_FIELDS = ("item_id", "stage", "object_id", "annotator", "verdict", "reason_codes", "comment",
                  "reviewed_at", "item_state", "final_decision", "flags")


def _verdict_reviews(stage: str | None):
    # Gold items are checks on annotators, not data: left out of the verdict table (issue #16).
    qs = Review.objects.filter(item__state__in=COMPLETE_STATES, item__gold__isnull=True)
    return qs.filter(item__stage=stage) if stage else qs


def verdict_table(*, stage: str | None = None, chunk_size: int = 2000) -> Iterator[tuple]:
    """One tuple per review of a complete item (VERDICT_FIELDS), streamed from plain columns.

    No model instances and no per-row prefetch: the flags come from one grouped read keyed by
    review, and the reviews from ``values_list(...).iterator()``.
    """
    flags: dict[int, list] = defaultdict(list)
    for review_id, *flag in Flag.objects.filter(review__in=_verdict_reviews(stage)).order_by(
            "review_id", "id").values_list("review_id", "kind", "target", "reason", "comment"):
        flags[review_id].append(flag)
    qs = _verdict_reviews(stage).order_by("item_id", "id").values_list(
        "id", "item_id", "item__stage", "item__object_id", "annotator__username", "verdict", "reason_codes",
        "comment", "created_at", "item__state", "item__decision")
    loads = json.loads
    tz = connection.timezone
    utc = tz.utcoffset(None) == timedelta(0)
    # The cursor's own values (no per-row ORM converters): JSON arrives as text, and SQLite's
    # timestamps naive in the connection's time zone (UTC unless configured), as Django reads them.
    for pk, item_id, st, object_id, user, verdict, codes, comment, at, state, decision in plain_rows(qs, chunk_size):
        if codes.__class__ is str:
            codes = () if codes == "[]" else loads(codes)
        if at.tzinfo is None:
            at = at.replace(tzinfo=tz) if utc else timezone.make_aware(at, tz)
        at = at.isoformat()
        f = flags.get(pk)
        yield (item_id, st, object_id, user, verdict, " ".join(codes or ()), comment, at, state, decision,
               flags_text(SimpleNamespace(kind=k, target=t, reason=r, comment=c) for k, t, r, c in f) if f else "")


def verdict_rows(*, stage: str | None = None) -> list[dict[str, Any]]:
    """One row per review of a complete item: the raw table behind the agreement figures."""
    return [dict(zip(VERDICT_FIELDS, row)) for row in verdict_table(stage=stage)]

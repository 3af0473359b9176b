"""Read-only curation figures: the stage funnel, per-annotator progress, agreement, the verdict table.

Agreement and the verdict table use complete items only (every required review submitted), so
they never reveal a verdict to someone who could still review the item.
"""
from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count, Q
from django.utils import timezone

from curation.agreement import cohen_kappa, krippendorff_alpha_nominal, percent_agreement
from curation.annotation_models import flags_text
from curation.models import Claim, ItemState, Review, ReviewItem, ReviewStage, Skip, Verdict
from curation.state import Effective, effective_q

COMPLETE_STATES = (ItemState.DISAGREEMENT, ItemState.DECIDED)


def stage_funnel() -> list[dict[str, Any]]:
    """Per stage: review items by effective state (curation.state), in one grouped query.

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
    from curation import queue

    now = timezone.now()
    return {stage: queue.count_candidates(stage=stage, annotator_id=annotator.pk, now=now, cap=AVAILABLE_CAP)
            for stage in ReviewStage.values}


AVAILABLE_CAP = 100  # the queue page shows "100+" beyond this


def annotator_progress(*, annotator=None) -> list[dict[str, Any]]:
    """Reviews, accepts, rejects, skips and held claims per annotator and stage."""
    reviews = Review.objects.all()
    skips = Skip.objects.all()
    claims = Claim.objects.filter(effective_q(Effective.OPEN, prefix="item__"), expires_at__gt=timezone.now())
    if annotator is not None:
        reviews, skips, claims = (qs.filter(annotator=annotator) for qs in (reviews, skips, claims))
    table: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"reviews": 0, "accepts": 0, "rejects": 0, "skips": 0, "claims": 0})
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


def verdict_rows(*, stage: str | None = None) -> list[dict[str, Any]]:
    """One row per review of a complete item: the raw table behind the agreement figures."""
    # Gold items are checks on annotators, not data: left out of the verdict table (issue #16).
    qs = Review.objects.filter(item__state__in=COMPLETE_STATES, item__gold__isnull=True).select_related(
        "item", "annotator").prefetch_related("flags")
    if stage:
        qs = qs.filter(item__stage=stage)
    return [
        {
            "item_id": r.item_id, "stage": r.item.stage, "object_id": r.item.object_id,
            "annotator": r.annotator.username, "verdict": r.verdict,
            "reason_codes": " ".join(r.reason_codes or []), "comment": r.comment,
            "reviewed_at": r.created_at.isoformat(), "item_state": r.item.state,
            "final_decision": r.item.decision,
            "flags": flags_text(r.flags.all()),  # issue #16
        }
        for r in qs.order_by("item_id", "id")
    ]


def _figures(pairs: list[tuple[str, str]], units: list[list[str]]) -> dict[str, Any]:
    return {
        "percent": percent_agreement(pairs).as_dict(),
        "kappa": cohen_kappa(pairs).as_dict(),
        "alpha": krippendorff_alpha_nominal(units).as_dict(),
    }


def agreement_for_stage(stage: str) -> dict[str, Any]:
    """Agreement on `stage` overall and per annotator pair, with the counts behind every figure.

    Overall, percent agreement counts every pair of reviews on the same item; κ treats each
    item's first and second review as two raters (the usual stand-in when raters rotate); α uses
    all reviews of every item. Per pair, all three use the items both annotators reviewed.
    """
    rows = list(
        Review.objects.filter(item__stage=stage, item__state__in=COMPLETE_STATES, item__gold__isnull=True)
        .order_by("item_id", "id").values_list("item_id", "annotator_id", "verdict")
    )
    by_item: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for item_id, annotator_id, verdict in rows:
        by_item[item_id].append((annotator_id, verdict))
    units = [[v for _, v in reviews] for reviews in by_item.values()]
    all_pairs = [(a[1], b[1]) for reviews in by_item.values() for a, b in combinations(reviews, 2)]
    first_second = [(reviews[0][1], reviews[1][1]) for reviews in by_item.values() if len(reviews) >= 2]
    overall = _figures(all_pairs, units)
    overall["kappa"] = cohen_kappa(first_second).as_dict()

    names = dict(get_user_model().objects.filter(
        pk__in={a for _, a, _ in rows}).values_list("pk", "username"))
    pair_items: dict[tuple[int, int], list[tuple[str, str]]] = defaultdict(list)
    for reviews in by_item.values():
        for (a, va), (b, vb) in combinations(sorted(reviews, key=lambda r: names.get(r[0], "")), 2):
            pair_items[(a, b)].append((va, vb))
    pairs = [
        {"a": names.get(a, str(a)), "b": names.get(b, str(b)), "n": len(p), **_figures(p, [list(x) for x in p])}
        for (a, b), p in sorted(pair_items.items(), key=lambda kv: (names.get(kv[0][0], ""), names.get(kv[0][1], "")))
    ]
    return {
        "stage": stage, "label": dict(ReviewStage.choices)[stage], "items": len(by_item),
        "reviews": len(rows), "overall": overall, "pairs": pairs,
    }

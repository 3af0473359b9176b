"""An item's effective state: the one definition every list and count uses.

A ReviewItem stores its review workflow (``state``: open → disagreement → decided, plus the
decision) and, separately, whether a rejected ancestor took it out of curation (``excluded``).
Pages, counts, releases and the API never read those two columns on their own: they ask this
module, so an excluded item is never "awaiting adjudication" on one page and "excluded" on another.

    excluded                      → EXCLUDED  (reason: the rejected ancestor, or withheld in the
                                               explorer: ``withheld``, kept through the cascade)
    state = decided, accept       → ACCEPTED
    state = decided, reject       → REJECTED
    state = disagreement          → AWAITING  (adjudication)
    state = open                  → OPEN      (needs reviews)

Exclusion wins over everything else, and it is reversible: the workflow columns are left as they
were, so when the ancestor is accepted again the item returns to exactly where it stood.
"""
from __future__ import annotations

from django.db import models
from django.db.models import Case, Q, Value, When

from curation.models import ItemState, ReviewItem, ReviewStage, Verdict


class Effective(models.TextChoices):
    OPEN = "open", "Needs reviews"
    AWAITING = "awaiting", "Awaiting adjudication"
    ACCEPTED = "accepted", "Accepted"
    REJECTED = "rejected", "Rejected"
    EXCLUDED = "excluded", "Excluded (ancestor rejected)"


_Q = {
    Effective.EXCLUDED: Q(excluded=True),
    Effective.OPEN: Q(excluded=False, state=ItemState.OPEN),
    Effective.AWAITING: Q(excluded=False, state=ItemState.DISAGREEMENT),
    Effective.ACCEPTED: Q(excluded=False, state=ItemState.DECIDED, decision=Verdict.ACCEPT),
    Effective.REJECTED: Q(excluded=False, state=ItemState.DECIDED, decision=Verdict.REJECT),
}


def effective_q(state: str, prefix: str = "") -> Q:
    """A filter for items in effective `state`; ``prefix`` ("item__") filters related rows."""
    q = _Q[Effective(state)]
    if not prefix:
        return q
    return Q(*[(prefix + k, v) for k, v in q.children], _connector=q.connector)


def effective_of(item: ReviewItem) -> str:
    if item.excluded:
        return Effective.EXCLUDED
    if item.state == ItemState.OPEN:
        return Effective.OPEN
    if item.state == ItemState.DISAGREEMENT:
        return Effective.AWAITING
    return Effective.ACCEPTED if item.decision == Verdict.ACCEPT else Effective.REJECTED


def effective_case() -> Case:
    """The effective state as an SQL expression (for annotate / values / GROUP BY)."""
    return Case(*[When(q, then=Value(str(s))) for s, q in _Q.items()], output_field=models.CharField())


def with_effective(qs):
    return qs.annotate(effective=effective_case())


def items_in(state: str, stage: str | None = None):
    qs = ReviewItem.objects.filter(effective_q(state))
    return qs.filter(stage=stage) if stage else qs


WITHHELD_LABEL = "Excluded (withheld in the explorer)"


def exclusion_reason(item: ReviewItem) -> str:
    """Why the item is excluded: the rejected (or withheld) ancestors, or its own withholding
    ("" when it is not excluded)."""
    if not item.excluded:
        return ""
    from curation.reviews.lineage import ancestors

    rows = list(ancestors(item.stage, item.object_id))
    q = Q(pk__in=[])
    for s, oid in rows:
        q |= Q(stage=s, object_id=oid)
    labels = dict(ReviewStage.choices)
    above = ReviewItem.objects.filter(q).filter(effective_q(Effective.REJECTED) | Q(withheld=True)).order_by("id")
    rejected = [f"{labels[r.stage]} #{r.object_id}" for r in above if not r.withheld]
    withheld = [f"{labels[r.stage]} #{r.object_id}" for r in above if r.withheld]
    parts = []
    if rejected:
        parts.append("Ancestor rejected: " + ", ".join(rejected))
    if withheld:
        parts.append("Ancestor withheld in the explorer: " + ", ".join(withheld))
    if item.withheld:
        from curation.models import CorrectionMark, MarkKind

        regenerate = CorrectionMark.objects.filter(stage=item.stage, object_id=item.object_id, kind=MarkKind.REGENERATE)
        parts.append("Withheld: a structural correction above it asks for it to be regenerated"
                     if regenerate.exists() else "Withheld in the explorer")
    return "; ".join(parts) or "Ancestor rejected"


def describe(item: ReviewItem) -> dict[str, str]:
    """{"state": ..., "label": ..., "reason": ...} for pages and the API."""
    state = effective_of(item)
    label = WITHHELD_LABEL if state == Effective.EXCLUDED and item.withheld else Effective(state).label
    return {"state": str(state), "label": label, "reason": exclusion_reason(item)}


def describe_short(item: ReviewItem) -> dict[str, str]:
    """describe() without the reason (no query): for lists."""
    state = effective_of(item)
    label = WITHHELD_LABEL if state == Effective.EXCLUDED and item.withheld else Effective(state).label
    return {"state": str(state), "label": label}


# What an annotator may see of an item they reviewed: whether it still waits for reviews, never
# how the others voted. Accepted-on-agreement and awaiting-adjudication read the same.
BLIND_LABELS = {Effective.OPEN: "Waiting for other reviews", Effective.AWAITING: "All reviews in",
                Effective.ACCEPTED: "All reviews in", Effective.REJECTED: "All reviews in",
                Effective.EXCLUDED: "Excluded"}


def describe_blind(item: ReviewItem) -> dict[str, str]:
    state = effective_of(item)
    return {"state": "complete" if BLIND_LABELS[state] == "All reviews in" else str(state),
            "label": BLIND_LABELS[state], "reason": ""}

"""What annotators are told of corrections (issue #31 item 5): on the review page and in the queue.

Only facts about the artifact are shown — that it was corrected, when, which version is current,
which version one's own review saw, and that a correction above it asks for another look or for
regeneration. Never the adjudicator's note (it may describe the other verdicts) nor anything that
depends on how anyone voted, so the pages stay blind (tests/curation/page_invariants.py).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

from django.db.models import Q

from curation.models import ArtifactVersion, CorrectionMark, ReviewItem, ReviewStage


def notices(items: Iterable[ReviewItem]) -> dict[int, dict[str, Any]]:
    """{item id: {"version", "corrected_at", "versions", "marks"}} for the items that have any
    (none for items not flagged ``corrected``; else two queries whatever their number)."""
    items = [it for it in items if it.corrected]  # the flag saves the common case its queries
    if not items:
        return {}
    targets = Q(pk__in=[])
    for it in items:
        targets |= Q(stage=it.stage, object_id=it.object_id)
    versions: dict[tuple[str, int], list[ArtifactVersion]] = defaultdict(list)
    for v in ArtifactVersion.objects.filter(targets).order_by("number").only(
            "stage", "object_id", "number", "created_at"):
        versions[(v.stage, v.object_id)].append(v)
    marks: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for m in CorrectionMark.objects.filter(targets).select_related("version").order_by("id"):
        marks[(m.stage, m.object_id)].append({
            "kind": m.kind, "source": ReviewStage(m.version.stage).label.lower(),
            "number": m.version.number, "at": m.version.created_at})
    out = {}
    for it in items:
        key = (it.stage, it.object_id)
        if not versions[key] and not marks[key]:
            continue
        last = versions[key][-1] if versions[key] else None
        out[it.pk] = {"version": last.number if last else 1, "corrected_at": last.created_at if last else None,
                      "versions": versions[key], "marks": marks[key]}
    return out


def notice(item: ReviewItem, own_review=None) -> dict[str, Any] | None:
    """The review page's notice; with one's own review, the version it saw."""
    found = notices([item]).get(item.pk)
    if found is not None and own_review is not None:
        from curation.reviews.corrections import version_seen

        found["seen"] = version_seen(found["versions"], own_review.updated_at)
    return found


def attach_to_claims(claims: list) -> list:
    """Each held claim with `.correction` (its item's notice, or None), for the queue page."""
    found = notices(c.item for c in claims)
    for c in claims:
        c.correction = found.get(c.item_id)
    return claims

"""The data explorer: one page per stage listing review items with filters, sorting, pagination
(all in the query string), and bulk actions for admins and adjudicators.

Annotators see only the items they reviewed, with their own verdict; nothing about other
annotators or gold items reaches them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from almita_web.roles import ADJUDICATOR, ADMIN, has_role
from curation.models import (AuditEvent, CorrectionMark, Flag, GoldItem, ItemState, MarkKind, Resolution, Review,
                             ReviewItem, ReviewStage, Verdict)
from curation.reviews.assignment import release_beyond
from curation.reviews.lineage import STAGE_MODELS, blocked_above, cascade_apply
from curation.reviews.state import Effective, describe, describe_blind, effective_q, exclusion_reason
from generation.models import GenerationJob
from projects.scoping import rows_to_write

PAGE_SIZE = 50
# The state filters read curation.reviews.state, the one definition of an item's effective state, so an
# excluded item is never listed as accepted or awaiting adjudication here while excluded elsewhere.
STATES = {
    "open": ("Needs reviews", effective_q(Effective.OPEN)),
    "disagreement": ("Awaiting adjudication", effective_q(Effective.AWAITING)),
    "accepted": ("Accepted", effective_q(Effective.ACCEPTED)),
    "rejected": ("Rejected", effective_q(Effective.REJECTED)),
    "excluded": ("Excluded", effective_q(Effective.EXCLUDED)),
    # For annotators: disputed, accepted and rejected look the same ("all reviews in"), or they
    # would learn how the others voted (curation.reviews.state.BLIND_LABELS).
    "waiting": ("Waiting for other reviews", effective_q(Effective.OPEN)),
    "complete": ("All reviews in", effective_q(Effective.AWAITING) | effective_q(Effective.ACCEPTED)
                 | effective_q(Effective.REJECTED)),
}
ANNOTATOR_STATES = ("waiting", "complete", "excluded")
STAFF_STATES = ("open", "disagreement", "accepted", "rejected", "excluded")
SORTS = {
    "id": ("Oldest first", ["id"]), "-id": ("Newest first", ["-id"]),
    "-decided": ("Recently decided", ["-decided_at", "-id"]),
    "-reviews": ("Most reviews", ["-review_count", "id"]),
    "warnings": ("Warnings first", ["-has_warnings", "id"]),
}
# When an item was decided tells an agreement (at once) from a disagreement (later, or never).
ANNOTATOR_SORTS = ("id", "-id", "-reviews", "warnings")
# What text search reads, per stage (besides an item or object id).
TEXT_FIELDS = {
    ReviewStage.PROCEDURE: ["text", "title"],
    ReviewStage.FLOWGRAPH: ["text"],
    ReviewStage.CONVERSATION_GRAPH: ["text"],
    ReviewStage.CONVERSATION: ["messages"],
}


class ExplorerError(Exception):
    """A bulk action that cannot run; the message is shown to the user."""


@dataclass
class Query:
    stage: str
    job: int | None = None
    state: str = ""
    warnings: str = ""
    reason: str = ""
    annotator: str = ""
    noise: str = ""
    model: str = ""
    q: str = ""
    split: bool = False  # the reviews disagree (at least one accept and one reject)
    pair: tuple[str, str] | None = None  # reviewed by both of these annotators
    sort: str = "id"
    page: int = 1
    errors: list[str] = field(default_factory=list)


def _int(value: str | None, name: str, errors: list[str], lo: int = 1, hi: int = 2**62) -> int | None:
    if value in (None, ""):
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        errors.append(f"{name}: {value[:30]!r} is not a whole number.")
        return None
    if not lo <= n <= hi:
        errors.append(f"{name}: {n} is out of range.")
        return None
    return n


def parse(stage: str, params) -> Query:
    """The explorer's query from the URL; a bad value is dropped with a message, never a 500."""
    errors: list[str] = []
    qry = Query(stage=stage, errors=errors)
    qry.job = _int(params.get("job"), "job", errors)
    qry.state = params.get("state", "") if params.get("state", "") in STATES else ""
    qry.warnings = params.get("warnings", "") if params.get("warnings") in ("yes", "no") else ""
    qry.reason = (params.get("reason") or "").strip()[:64]
    qry.annotator = (params.get("annotator") or "").strip()[:150]
    qry.noise = (params.get("noise") or "").strip()[:64]
    qry.model = (params.get("model") or "").strip()[:200]
    qry.q = (params.get("q") or "").strip()[:200]
    qry.split = params.get("split") == "yes"
    pair = [p.strip() for p in (params.get("pair") or "").split(",") if p.strip()]
    if len(pair) == 2:
        qry.pair = (pair[0][:150], pair[1][:150])
    elif pair:
        errors.append("pair: give two usernames separated by a comma.")
    qry.sort = params.get("sort", "id") if params.get("sort") in SORTS else "id"
    qry.page = _int(params.get("page"), "page", errors, hi=10**6) or 1
    return qry


def _json_has(field_name: str, value: str) -> Q:
    from curation.releases.services import _json_contains_supported

    if _json_contains_supported():
        return Q(**{f"{field_name}__contains": [value]})
    return Q(**{f"{field_name}__icontains": f'"{value}"'})


def items(qry: Query, user) -> QuerySet[ReviewItem]:
    """The filtered, sorted items `user` may list."""
    model = STAGE_MODELS[qry.stage]
    qs = ReviewItem.objects.filter(stage=qry.stage)
    own_only = not has_role(user, ADJUDICATOR) and not has_role(user, "researcher")
    if own_only:
        qs = qs.filter(reviews__annotator=user)
    if qry.state:
        state = qry.state
        if (state in ANNOTATOR_STATES) != own_only and state != "excluded":
            state = ""
        if state:
            qs = qs.filter(STATES[state][1])
    if qry.warnings:
        qs = qs.filter(has_warnings=qry.warnings == "yes")
    artifacts = model.objects.all()
    narrowed = False
    if qry.job:
        artifacts, narrowed = artifacts.filter(job_id=qry.job), True
    if qry.model:
        jobs = [j.pk for j in GenerationJob.objects.only("config")
                if qry.model in ((j.config or {}).get("models") or {}).values()]
        artifacts, narrowed = artifacts.filter(job_id__in=jobs), True
    if qry.noise and qry.stage in (ReviewStage.CONVERSATION, ReviewStage.CONVERSATION_GRAPH):
        artifacts, narrowed = artifacts.filter(_json_has("noise_kinds", qry.noise)), True
    if qry.q:
        cond = Q()
        for name in TEXT_FIELDS[qry.stage]:
            cond |= Q(**{f"_t_{name}__icontains": qry.q})
        annotated = artifacts.annotate(**{f"_t_{n}": Cast(n, TextField()) for n in TEXT_FIELDS[qry.stage]})
        text_ids = annotated.filter(cond).values("pk")
        if qry.q.isdigit() and len(qry.q) < 18:
            # A number means an id (item or artifact), not every text with that digit in it.
            qs = qs.filter(Q(pk=int(qry.q)) | Q(object_id=int(qry.q)))
        else:
            qs = qs.filter(object_id__in=text_ids)
    if narrowed:
        qs = qs.filter(object_id__in=artifacts.values("pk"))
    if qry.split and not own_only:
        qs = qs.filter(pk__in=Review.objects.filter(verdict=Verdict.ACCEPT).values("item_id")).filter(
            pk__in=Review.objects.filter(verdict=Verdict.REJECT).values("item_id"))
    if qry.pair and not own_only:
        for name in qry.pair:
            qs = qs.filter(pk__in=Review.objects.filter(annotator__username=name).values("item_id"))
    reviews = Review.objects.filter(annotator=user) if own_only else Review.objects.all()
    if qry.annotator and not own_only:
        reviews = reviews.filter(annotator__username=qry.annotator)
    if qry.reason:
        flagged = Flag.objects.filter(reason=qry.reason).values("review_id")
        reviews = reviews.filter(_json_has("reason_codes", qry.reason) | Q(pk__in=flagged))
    if qry.reason or (qry.annotator and not own_only):
        qs = qs.filter(pk__in=reviews.values("item_id"))
    sort = qry.sort if not own_only or qry.sort in ANNOTATOR_SORTS else "id"
    return qs.distinct().order_by(*SORTS[sort][1])


def page_of(qs: QuerySet[ReviewItem], page: int) -> dict[str, Any]:
    total = qs.count()
    pages = max(1, -(-total // PAGE_SIZE))
    page = min(page, pages)
    rows = list(qs[(page - 1) * PAGE_SIZE: page * PAGE_SIZE])
    return {"rows": rows, "total": total, "page": page, "pages": pages,
            "first": (page - 1) * PAGE_SIZE + 1 if total else 0, "last": (page - 1) * PAGE_SIZE + len(rows)}


def rows_for(items_: list[ReviewItem], user, *, show_gold: bool, own_only: bool = False) -> list[dict[str, Any]]:
    """One row per item: its effective state (blind for annotators), own verdict, the verdicts
    the user may see, gold mark. An annotator's row shows their own verdict only."""
    from curation.reviews.services import reviews_visible_to

    by_item: dict[int, list[Review]] = {}
    visible = Review.objects.filter(annotator=user) if own_only else reviews_visible_to(user)
    for r in visible.filter(item__in=items_).select_related("annotator").order_by("id"):
        by_item.setdefault(r.item_id, []).append(r)
    gold = set(GoldItem.objects.filter(item__in=items_).values_list("item_id", flat=True)) if show_gold else set()
    out = []
    for it in items_:
        reviews = by_item.get(it.pk, [])
        own = next((r for r in reviews if r.annotator_id == user.pk), None)
        out.append({"item": it, "own": own, "reviews": reviews, "gold": it.pk in gold,
                    "effective": describe_blind(it) if own_only else describe(it)})
    return out


def choices(stage: str, own_only: bool = False) -> dict[str, Any]:
    """Values the filter selects offer."""
    from curation.guidance.services import reason_codes

    models_: set[str] = set()
    for cfg in GenerationJob.objects.values_list("config", flat=True):
        models_ |= {str(m) for m in ((cfg or {}).get("models") or {}).values() if m}
    return {
        "states": [(k, STATES[k][0]) for k in (ANNOTATOR_STATES if own_only else STAFF_STATES)],
        "sorts": [(k, v[0]) for k, v in SORTS.items() if not own_only or k in ANNOTATOR_SORTS],
        "reasons": reason_codes(stage), "models": sorted(models_),
        "jobs": list(GenerationJob.objects.order_by("-id").values_list("id", "name")[:200]),
    }


# --------------------------------------------------------------------------- bulk actions


def _audit(actor, item: ReviewItem, action: str, before: dict, after: dict) -> None:
    AuditEvent.objects.create(actor=actor, action=AuditEvent.Action.CASCADE, item=item,
                              before=before, after={"bulk": action, **after})


@transaction.atomic
def items_bulk(*, actor, stage: str, item_ids: list[int], action: str, required: int | None = None) -> dict[str, int]:
    """Re-queue, exclude, include or set the reviews needed for many items; returns counts.

    * requeue: a decided or disputed item goes back to the queue for one more review; its
      resolution is withdrawn and the lineage below is recomputed (reviews are kept).
    * exclude / include: withhold an item (it and everything below it are excluded, whatever the
      cascade does later), or include it again. Including an item whose ancestor is rejected or
      withheld is refused, with that reason: it would otherwise count as accepted under a rejection.
    * required: set the reviews an open item needs (never below the reviews it already has; claims
      beyond the new need are released, latest first).
    """
    if not (has_role(actor, ADJUDICATOR) or has_role(actor, ADMIN)):
        raise ExplorerError("Bulk actions need the adjudicator or admin role.")
    if action not in ("requeue", "exclude", "include", "required"):
        raise ExplorerError("Unknown bulk action.")
    if not item_ids:
        raise ExplorerError("Tick at least one item.")
    if action == "required" and (required is None or not 1 <= required <= 10):
        raise ExplorerError("The number of reviews needed must be between 1 and 10.")
    done = skipped = 0
    refused: list[str] = []
    for item in ReviewItem.objects.select_for_update().filter(stage=stage, pk__in=item_ids).order_by("id"):
        before = {"state": item.state, "decision": item.decision, "excluded": item.excluded, "withheld": item.withheld,
                  "required_reviews": item.required_reviews}
        if action == "requeue":
            if item.state == ItemState.OPEN:
                skipped += 1
                continue
            rows_to_write(Resolution).filter(item_id=item.pk).delete()
            item.state, item.decision, item.decided_at = ItemState.OPEN, "", None
            item.required_reviews = min(item.review_count + 1, 32767)
            item.save(update_fields=["state", "decision", "decided_at", "required_reviews"])
            cascade_apply(item)
        elif action == "exclude":
            if item.withheld:
                skipped += 1
                continue
            item.withheld = True
            item.save(update_fields=["withheld"])
            cascade_apply(item, actor)
        elif action == "include":
            if blocked_above(item.stage, item.object_id):
                refused.append(f"{item}: {exclusion_reason(item)}; include that one again first.")
                continue
            if CorrectionMark.objects.filter(stage=item.stage, object_id=item.object_id,
                                             kind=MarkKind.REGENERATE).exists():
                refused.append(f"{item}: a structural correction above it asks for it to be regenerated; "
                               "regenerate below the corrected graph instead.")
                continue
            if not item.withheld:
                skipped += 1
                continue
            item.withheld = False
            item.save(update_fields=["withheld"])
            cascade_apply(item, actor)
        else:
            if item.state != ItemState.OPEN or required <= item.review_count:
                skipped += 1
                continue
            item.required_reviews = required
            item.save(update_fields=["required_reviews"])
            # Fewer reviews needed than annotators now hold it (a claim or an assignment): the
            # latest holders beyond the new need are released, so no item ever has more
            # annotators on it than it needs.
            gone = release_beyond(item, actor, timezone.now())
            if gone:
                before["claims_released"] = gone
        done += 1
        item.refresh_from_db(fields=["excluded"])
        _audit(actor, item, action, before, {"state": item.state, "excluded": item.excluded, "withheld": item.withheld,
                                             "required_reviews": item.required_reviews,
                                             "at": timezone.now().isoformat()})
    return {"done": done, "skipped": skipped, "refused": refused}

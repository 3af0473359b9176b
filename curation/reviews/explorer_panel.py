"""The explorer's data-manager parts (issue #31): a content preview per row, the side panel that
shows an item as the review page does, bulk actions over a whole filter, and the gold toggle.

One grouped query per page for the previews (never one per row). The side panel applies the same
blindness as the review page: verdicts come from ``reviews_visible_to`` only, and an annotator's
decided item reads "All reviews in" with its artifact pending, as on their review page.
"""
from __future__ import annotations

from typing import Any

from almita_web.roles import ADJUDICATOR, ADMIN, RESEARCHER, has_role
from curation.models import GoldItem, ItemState, ReviewItem, ReviewStage
from curation.reviews.lineage import STAGE_MODELS
from curation.reviews.state import describe, describe_blind
from generation.models import Api, CurationStatus

# (key, label, shown by default). Chosen per user in the browser (localStorage); all are rendered.
COLUMNS = [
    ("item", "Item", True), ("preview", "Preview", True), ("state", "State", True),
    ("reviews", "Reviews", True), ("assigned", "Assigned", True), ("verdicts", "Verdicts", True), ("warnings", "Warnings", True),
    ("created", "Created", False), ("decided", "Decided", False), ("gold", "Gold", True),
]
PREVIEW_TURNS = 2
PREVIEW_CHARS = 90
BULK_FILTER_MAX = 50_000  # a bulk action over a filter touches at most this many items


class PanelError(Exception):
    """Raised for an action the user may not take; the message is shown."""


def _short(text: Any, n: int = PREVIEW_CHARS) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _count(value: Any, key: str) -> int:
    return len(value.get(key) or []) if isinstance(value, dict) and isinstance(value.get(key), list) else 0


def previews(stage: str, items: list[ReviewItem]) -> dict[int, dict[str, Any]]:
    """item id → {"turns": [(role, text)], "nodes", "edges", "title", "warnings"} in one query
    (two for procedures, whose APIs carry warnings too)."""
    ids = [it.object_id for it in items]
    model = STAGE_MODELS[stage]
    by_obj: dict[int, dict[str, Any]] = {}
    if stage == ReviewStage.CONVERSATION:
        for pk, messages, validation in model.objects.filter(pk__in=ids).values_list("pk", "messages", "validation"):
            turns = [(str(m.get("role", "")), _short(m.get("content"))) for m in (messages or [])[:PREVIEW_TURNS]
                     if isinstance(m, dict)]
            by_obj[pk] = {"turns": turns, "n_turns": len(messages or []), "warnings": len(validation or [])}
    elif stage in (ReviewStage.FLOWGRAPH, ReviewStage.CONVERSATION_GRAPH):
        for pk, data, validation in model.objects.filter(pk__in=ids).values_list("pk", "data", "validation"):
            by_obj[pk] = {"nodes": _count(data, "nodes"), "edges": _count(data, "edges"),
                          "warnings": len(validation or [])}
    else:
        for pk, title, text, validation in model.objects.filter(pk__in=ids).values_list("pk", "title", "text", "validation"):
            by_obj[pk] = {"title": _short(title or text), "warnings": len(validation or []), "apis": 0}
        for proc_id, validation in Api.objects.filter(procedure_id__in=ids).values_list("procedure_id", "validation"):
            if proc_id in by_obj:
                by_obj[proc_id]["warnings"] += len(validation or [])
                by_obj[proc_id]["apis"] += 1
    return {it.pk: by_obj.get(it.object_id, {"missing": True, "warnings": 0}) for it in items}


# --------------------------------------------------------------------------- side panel


def own_only(user) -> bool:
    return not has_role(user, ADJUDICATOR) and not has_role(user, RESEARCHER)


def panel_context(user, item: ReviewItem) -> dict[str, Any]:
    """What the side panel shows of `item` for `user`; PanelError when they may not see it.

    Annotators see items they reviewed (as on their review page); adjudicators, researchers and
    admins see any item, open ones included, with only the verdicts ``reviews_visible_to`` allows.
    """
    from curation.reviews.present import item_context
    from curation.reviews.services import reviews_visible_to

    blind = own_only(user)
    if blind and not item.reviews.filter(annotator=user).exists():
        raise PanelError("You can open only items you reviewed.")
    ctx = item_context(item)
    reviews = list(reviews_visible_to(user).filter(item=item).select_related("annotator").order_by("id"))
    ctx.update({"reviews": reviews, "own_review": next((r for r in reviews if r.annotator_id == user.pk), None),
                "effective": describe_blind(item) if blind else describe(item), "blind": blind,
                "blind_lineage": blind,  # no ancestor status: it would show how the others voted
                "is_admin": has_role(user, ADMIN), "staff": has_role(user, ADJUDICATOR),
                "gold": GoldItem.objects.filter(item=item).first() if has_role(user, ADMIN) else None})
    if blind and item.state == ItemState.DECIDED:
        # As the review page does: "Accepted" right after one's verdict would tell the others agreed.
        artifact = ctx.get("artifact")
        if artifact is not None and artifact.status in (CurationStatus.ACCEPTED, CurationStatus.REJECTED):
            artifact.status = CurationStatus.PENDING
    return ctx


# --------------------------------------------------------------------------- gold toggle


def gold_toggle(*, actor, item_id: int, expected: str) -> str:
    """Mark an item gold with `expected` ("accept"/"reject"), or unmark it (""), through the gold
    services; returns what was done."""
    from curation.guidance.services import GoldError, gold_mark, gold_unmark

    if not has_role(actor, ADMIN):
        raise PanelError("Marking gold needs the admin role.")
    try:
        if expected:
            gold_mark(actor=actor, item_ids=[item_id], expected=expected)
            return f"marked gold ({expected})"
        return "no longer gold" if gold_unmark(actor=actor, item_id=item_id) else "was not gold"
    except GoldError as exc:
        raise PanelError(str(exc)) from exc

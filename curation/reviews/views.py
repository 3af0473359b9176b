"""Curation pages: queue, review, adjudication, agreement, progress, audit log.

Each view: role check → form → service → redirect. Blindness is enforced here by never putting
another annotator's review in a context unless ``reviews_visible_to`` allows it.
"""
from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, RESEARCHER, has_role, role_required
from curation.agreement import services as agreement_services
from curation.guidance import services as guidance
from curation.models import ItemState, ReviewItem, ReviewStage
from curation.releases.services import csv_stream
from curation.reviews import correction_notices, corrections, discussion
from curation.reviews import queue as item_queue
from curation.reviews import services
from curation.reviews.audit import audit_page
from curation.reviews.forms import ResolveForm, ReviewForm, SkipForm
from curation.reviews.present import item_context, stage_fragments
from curation.reviews.state import describe, describe_short
from generation.models import CurationStatus


def _next_or_queue(request: HttpRequest, stage: str) -> HttpResponse:
    item = services.review_claim_next(annotator=request.user, stage=stage)
    if item is None:
        messages.info(request, f"No more {dict(ReviewStage.choices)[stage].lower()} items for you right now.")
        return redirect("curation:queue")
    return redirect("curation:review", pk=item.pk)


@require_GET
@role_required(ANNOTATOR)
def queue(request: HttpRequest) -> HttpResponse:
    services.items_sync_throttled()
    # Only the annotator's own work and what they may take: per-stage disagreement or acceptance
    # counts would let them infer another annotator's verdict right after submitting.
    available = agreement_services.annotator_available(annotator=request.user)
    return render(request, "curation/queue.html", {
        "stages": [{"stage": s, "label": label, "available": available[s]} for s, label in ReviewStage.choices],
        "progress": agreement_services.annotator_progress(annotator=request.user),
        "claims": correction_notices.attach_to_claims(services.held_claims(annotator=request.user)),
        "last_review": services.last_review(annotator=request.user),
        **_assigned(request.user),
    })


def _assigned(user) -> dict:
    items = services.assigned_items(annotator=user)
    return {"assigned": items[:services.ASSIGNED_SHOWN], "assigned_more": len(items) > services.ASSIGNED_SHOWN}


@require_POST
@role_required(ANNOTATOR)
def claim_next(request: HttpRequest, stage: str) -> HttpResponse:
    if stage not in ReviewStage.values:
        raise Http404("Unknown stage")
    services.items_sync_throttled(full=False)
    return _next_or_queue(request, stage)


def _review_access(request: HttpRequest, item: ReviewItem, claim):
    """(own review, claim) — or 403 when the user neither holds nor reviewed the item."""
    # Submitting deletes the claim and undo restores it, so a claim means no own review.
    own = None if claim else next(iter(item.reviews.filter(annotator=request.user).order_by()[:1]), None)
    if own is None and claim is None and not has_role(request.user, ADMIN):
        raise PermissionDenied("Take this item from the queue first.")
    return own, claim


@require_GET
@role_required(ANNOTATOR)
def review(request: HttpRequest, pk: int) -> HttpResponse:
    # Plain SQL, with the user's claim on it: the most frequent page of the product.
    item, claim = item_queue.item_with_claim(item_id=pk, annotator_id=request.user.pk)
    if item is None:
        raise Http404("No such review item.")
    own, claim = _review_access(request, item, claim)
    last = services.last_review(annotator=request.user)
    ctx = item_context(item)
    can_review = own is None and claim is not None and item.state == ItemState.OPEN
    ctx.update(stage_fragments(item.stage, can_review))
    ctx.update({
        "own_review": own, "claim": claim,
        "skip_reasons": guidance.SKIP_REASONS,
        "can_review": can_review,
        "last_review": last,
        # "Awaiting adjudication" would tell an annotator that the others voted differently.
        "show_disagreement": has_role(request.user, ADJUDICATOR),
        # An ancestor's curation status would tell an annotator who reviewed it how the others
        # voted (Accepted on agreement, Pending while disputed): only staff see it here.
        "blind_lineage": not (has_role(request.user, ADJUDICATOR) or has_role(request.user, ADMIN)),
        "correction": correction_notices.notice(item, own),  # issue #31 item 5
        # Others' verdicts on an open item are blind to all but admins: skip the query then.
        "visible_reviews": [] if item.state == ItemState.OPEN and not has_role(request.user, ADMIN) else
        services.reviews_visible_to(request.user).filter(item=item).exclude(annotator=request.user)
        .select_related("annotator"),
    })
    ctx.update(guidance.review_page_extras(item, ctx, own))  # issue #16: flag panel
    if own is not None or has_role(request.user, ADMIN):  # issue #31: history and discussion
        can_change = own is not None and item.state == ItemState.OPEN and not item.excluded
        ctx.update({"thread": discussion.thread(request.user, item), "can_change": can_change,
                    "change_reasons": guidance.reason_codes(item.stage) if can_change else []})
    if not ctx["show_disagreement"] and item.state == ItemState.DECIDED and not has_role(request.user, ADMIN):
        # Shown as "All reviews in", like a disputed item, and its artifact as pending: "Decided"
        # or "Accepted" right after one's verdict would mean the others agreed (the page's
        # copies only; nothing is saved).
        item.state = ItemState.DISAGREEMENT
        artifact = ctx.get("artifact")
        if artifact is not None and artifact.status in (CurationStatus.ACCEPTED, CurationStatus.REJECTED):
            artifact.status = CurationStatus.PENDING
    return render(request, "curation/review.html", ctx)


@require_POST
@role_required(ANNOTATOR)
def submit(request: HttpRequest, pk: int) -> HttpResponse:
    item = item_queue.item_by_id(pk)
    if item is None:
        raise Http404("No such review item.")
    form = ReviewForm(request.POST, stage=item.stage)
    if not form.is_valid():
        for field, errors in form.errors.items():
            for error in errors:
                messages.error(request, error)
        return redirect("curation:review", pk=pk)
    try:
        # issue #16: the verdict with its flags, time spent and guideline version
        review = guidance.review_submit_flagged(
            annotator=request.user, item_id=pk, verdict=form.cleaned_data["verdict"],
            reason_codes=form.cleaned_data["reason_codes"], comment=form.cleaned_data["comment"],
            flags=form.cleaned_data.get("flags"))
    except services.CurationError as exc:
        messages.error(request, str(exc))
        return redirect("curation:queue")
    # Undo works while the item still waits for reviews; after the last one it is gone, and
    # the flash must not offer it (it says nothing of how the others voted either way).
    # (The review's item is the row the service locked and updated: no query.)
    still_open = review.item.state == ItemState.OPEN and not review.item.excluded
    messages.success(request, f"Verdict saved for {item}. Press u to undo." if still_open
                     else f"Verdict saved for {item}; all its reviews are in.")
    return _next_or_queue(request, item.stage)


@require_POST
@role_required(ANNOTATOR)
def skip(request: HttpRequest, pk: int) -> HttpResponse:
    item = get_object_or_404(ReviewItem, pk=pk)
    form = SkipForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose why you skip the item.")
        return redirect("curation:review", pk=pk)
    try:
        services.review_skip(annotator=request.user, item_id=pk, reason=form.reason_text())
    except services.CurationError as exc:
        messages.error(request, str(exc))
        return redirect("curation:queue")
    messages.info(request, f"Skipped {item}.")
    return _next_or_queue(request, item.stage)


@require_POST
@role_required(ANNOTATOR)
def undo(request: HttpRequest) -> HttpResponse:
    try:
        item = services.review_undo(annotator=request.user)
    except services.CurationError as exc:
        messages.error(request, str(exc))
        return redirect("curation:queue")
    messages.success(request, f"Your verdict on {item} was withdrawn; review it again.")
    return redirect("curation:review", pk=item.pk)


# --------------------------------------------------------------------------- adjudication


@require_GET
@role_required(ADJUDICATOR)
def adjudication(request: HttpRequest) -> HttpResponse:
    stage = request.GET.get("stage") or None
    if stage and stage not in ReviewStage.values:
        stage = None
    return render(request, "curation/adjudication.html", {
        "items": services.adjudication_queue(stage=stage)[:200],
        # Each with its effective state: a decided item under a rejected ancestor reads "excluded".
        "recent": [(it, describe_short(it)) for it in
                   ReviewItem.objects.filter(state=ItemState.DECIDED).order_by("-decided_at", "-id")[:30]],
        "stage": stage, "stages": ReviewStage.choices,
    })


@role_required(ADJUDICATOR)
def adjudicate(request: HttpRequest, pk: int) -> HttpResponse:
    if request.method not in ("GET", "POST"):
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    item = get_object_or_404(ReviewItem, pk=pk)
    still_open = item.state == ItemState.OPEN
    if still_open and request.method == "POST":
        messages.error(request, f"{item} is still being reviewed.")
        return redirect("curation:adjudicate", pk=pk)
    # issue #31: an open item's content opens read-only; its verdicts stay blind (reviews_visible_to
    # gives an adjudicator only their own on an open item, an admin all).
    form = ResolveForm(request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            try:
                services.item_resolve(adjudicator=request.user, item_id=pk, decision=form.cleaned_data["decision"],
                                      note=form.cleaned_data["note"])
            except services.CurationError as exc:
                messages.error(request, str(exc))
            else:
                messages.success(request, f"{item} decided.")
                return redirect("curation:adjudicate", pk=pk)
    item.refresh_from_db()
    ctx = item_context(item)
    ctx.update({
        "form": form, "show_names": request.GET.get("names") == "1",
        "reviews": services.reviews_visible_to(request.user).filter(item=item).select_related("annotator").order_by("id"),
        "resolution": getattr(item, "resolution", None),
        "may_decide": services.may_adjudicate(request.user, item) and not item.excluded and not still_open,
        "still_open": still_open,
        "effective": describe(item),
        "cascade": services.descendant_statuses(item),
        "history": item.audit.select_related("actor").order_by("at", "id"),
        "thread": discussion.thread(request.user, item, names=request.GET.get("names") == "1"),
    })
    ctx["flags"] = guidance.combined_for_page(list(ctx["reviews"]), ctx["show_names"])  # issue #16
    ctx["may_correct"] = corrections.may_correct(request.user, item)  # issue #31 item 5
    ctx["correction_marks"] = corrections.marks_on(item.stage, item.object_id)
    return render(request, "curation/adjudicate.html", ctx)


# --------------------------------------------------------------------------- agreement, progress, audit


@require_GET
@role_required(ADJUDICATOR, RESEARCHER)
def agreement(request: HttpRequest) -> HttpResponse:
    return render(request, "curation/agreement.html", {
        "stages": list(agreement_services.agreement_by_stage().values()),  # two grouped queries for every stage
    })


@require_GET
@role_required(ADJUDICATOR, RESEARCHER)
def agreement_csv(request: HttpRequest) -> HttpResponse:
    stage = request.GET.get("stage") or None
    if stage and stage not in ReviewStage.values:
        raise Http404("Unknown stage")
    response = StreamingHttpResponse(csv_stream(agreement_services.VERDICT_FIELDS, agreement_services.verdict_table(stage=stage)),
                                     content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="verdicts-{stage or "all"}.csv"'
    return response


@require_GET
@role_required(ADJUDICATOR, RESEARCHER)
def progress(request: HttpRequest) -> HttpResponse:
    return render(request, "curation/progress.html", {
        "funnel": agreement_services.stage_funnel(), "progress": agreement_services.annotator_progress(), **agreement_services.progress_extras(),
    })


@require_GET
@role_required(ADMIN)
def audit(request: HttpRequest) -> HttpResponse:
    ctx = audit_page(request.GET)
    for error in ctx["filters"].errors:
        messages.error(request, error)
    ctx["admin_url"] = reverse("admin:curation_auditevent_changelist")
    return render(request, "curation/audit.html", ctx)

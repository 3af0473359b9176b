"""The correction page of a flowgraph, conversation graph or conversation (issue #31 item 5).

GET shows the form editor with the version history; POST saves a new version; check/ runs the
generation validators on the rows being edited and answers JSON (the page calls it as you type).
Role check first (adjudicator or admin, 403), then the item (404), then may_correct (403).
"""
from __future__ import annotations

import json

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from almita_web.roles import ADJUDICATOR, ADMIN, role_required, user_roles
from curation.models import ReviewItem, ReviewStage
from curation.reviews import corrections
from curation.reviews.services import reviews_visible_to
from generation.stages.base import api_specs

MAX_BODY = 2_000_000


def has_role_admin(user) -> bool:
    return ADMIN in user_roles(user)


def _item(request: HttpRequest, pk: int) -> ReviewItem:
    item = get_object_or_404(ReviewItem, pk=pk)
    refused = corrections.refusal(request.user, item)
    if refused:
        raise PermissionDenied(refused)
    return item


def _payload(raw: str | bytes):
    if len(raw) > MAX_BODY:
        raise corrections.CorrectionError("The content is too large.")
    try:
        return json.loads(raw or "null")
    except (ValueError, UnicodeDecodeError) as exc:
        raise corrections.CorrectionError("The content is not valid JSON.") from exc


@role_required(ADJUDICATOR)
def correct(request: HttpRequest, pk: int) -> HttpResponse:
    if request.method not in ("GET", "POST"):
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    item = _item(request, pk)
    try:
        artifact = corrections.load(item)
    except corrections.CorrectionError as exc:
        messages.error(request, str(exc))
        return redirect("curation:adjudicate", pk=pk)
    content = corrections.current_content(item.stage, artifact)
    note = ""
    status = 200
    if request.method == "POST":
        note, payload = request.POST.get("note", ""), None
        try:
            payload = _payload(request.POST.get("content", ""))
            version = corrections.correct(editor=request.user, item_id=pk, payload=payload, note=note)
        except corrections.CorrectionError as exc:
            messages.error(request, str(exc))
            status = 400
            if payload is not None:
                try:
                    content = corrections.clean(item.stage, payload)  # keep the rows being edited
                except corrections.CorrectionError:
                    pass
        else:
            messages.success(request, f"Saved version {version.number} ({version.get_change_display().lower()}).")
            return redirect("curation:correct", pk=pk)
    versions = corrections.history(item)
    reviews = list(reviews_visible_to(request.user).filter(item=item).order_by("id"))
    for i, r in enumerate(reviews, 1):
        r.label = f"Annotator {i}"
        r.version_seen = corrections.version_seen(versions, r.updated_at)
    procedure_id = corrections._procedure_id(item.stage, artifact)
    return render(request, "curation/correct.html", {
        "item": item, "artifact": artifact, "content": content, "note": note,
        "is_graph": item.stage in corrections.GRAPH_STAGES,
        "node_types": corrections.NODE_TYPES.get(item.stage, []), "roles": corrections.ROLES,
        "apis": [a.name for a in api_specs(procedure_id)],
        "findings": corrections.check(item.stage, content, procedure_id),
        "versions": versions, "reviews": reviews,
        "marked": corrections.marked_below([v.pk for v in versions]),
        "marks_here": corrections.marks_on(item.stage, item.object_id),
        "stage_label": ReviewStage(item.stage).label,
        "may_regenerate": item.stage in corrections.GRAPH_STAGES and has_role_admin(request.user),
    }, status=status)


@require_POST
@role_required(ADJUDICATOR)
def check(request: HttpRequest, pk: int) -> JsonResponse:
    item = _item(request, pk)
    try:
        artifact = corrections.load(item)
        content = corrections.clean(item.stage, _payload(request.body))
    except corrections.CorrectionError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    old = corrections.current_content(item.stage, artifact)
    return JsonResponse({
        "findings": corrections.check(item.stage, content, corrections._procedure_id(item.stage, artifact)),
        "change": "" if content == old else corrections.change_kind(item.stage, old, content),
    })


@require_POST
@role_required(ADJUDICATOR)
def regenerate(request: HttpRequest, pk: int) -> HttpResponse:
    """Admins: regenerate what a structural correction of a flowgraph or conversation graph marked."""
    item = _item(request, pk)
    try:
        job = corrections.regenerate_below(user=request.user, item_id=pk)
    except corrections.CorrectionError as exc:
        messages.error(request, str(exc))
        return redirect("curation:correct", pk=pk)
    what = ("the conversation graph and conversations are built again" if item.stage == ReviewStage.FLOWGRAPH
            else "paths are sampled again from the corrected graph, then conversations and tests built")
    messages.success(request, f"{job} queued: {what}.")
    return redirect("generation:job", job_id=job.pk)

"""Data explorer pages (see curation.reviews.explorer): role check → query from the URL → render; bulk
actions are POSTs that redirect back to the same filtered list."""
from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from almita_web.bounds import in_id_range
from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, RESEARCHER, has_role, role_required
from curation.models import ReviewStage
from curation.reviews import explorer


def _stage(stage: str) -> str:
    if stage not in ReviewStage.values:
        raise Http404("Unknown stage")
    return stage


@require_GET
@role_required(ANNOTATOR, ADJUDICATOR, RESEARCHER)
def explore(request: HttpRequest, stage: str) -> HttpResponse:
    stage = _stage(stage)
    qry = explorer.parse(stage, request.GET)
    for error in qry.errors:
        messages.error(request, error)
    page = explorer.page_of(explorer.items(qry, request.user), qry.page)
    is_admin = has_role(request.user, ADMIN)
    staff = has_role(request.user, ADJUDICATOR)
    own_only = not staff and not has_role(request.user, RESEARCHER)
    params = request.GET.copy()
    params.pop("page", None)
    base = params.urlencode()
    return render(request, "curation/explore.html", {
        "stage": stage, "stages": ReviewStage.choices, "q": qry, "page": page,
        "rows": explorer.rows_for(page["rows"], request.user, show_gold=is_admin, own_only=own_only),
        "choices": explorer.choices(stage, own_only), "own_only": own_only,
        "can_bulk": staff, "is_staff": staff, "base_query": base,
        "here": request.get_full_path(),
    })


@require_POST
@role_required(ADJUDICATOR)
def bulk(request: HttpRequest, stage: str) -> HttpResponse:
    stage = _stage(stage)
    back = request.POST.get("next") or ""
    if not back.startswith(reverse("curation:explore", args=[stage])):
        back = reverse("curation:explore", args=[stage])
    ids = []
    for raw in request.POST.getlist("items"):
        # Only what can be an id: 5,000 nines would not even convert (Python's digit limit).
        if raw.isdigit() and len(raw) <= 19 and in_id_range(int(raw)):
            ids.append(int(raw))
    required = request.POST.get("required") or ""
    try:
        result = explorer.items_bulk(actor=request.user, stage=stage, item_ids=ids,
                                     action=request.POST.get("action", ""),
                                     required=int(required) if required.isdigit() and len(required) < 4 else None)
    except explorer.ExplorerError as exc:
        messages.error(request, str(exc))
    else:
        if result["done"] or result["skipped"] or not result["refused"]:
            messages.success(request, f"{result['done']} item(s) changed, {result['skipped']} left as they were.")
        for reason in result["refused"][:10]:
            messages.error(request, f"Not included again: {reason}")
        if len(result["refused"]) > 10:
            messages.error(request, f"… and {len(result['refused']) - 10} more refused for the same kind of reason.")
    return redirect(back)

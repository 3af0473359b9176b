"""Data explorer pages (see curation.reviews.explorer): role check → query from the URL → render; bulk
actions are POSTs that redirect back to the same filtered list."""
from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from almita_web.bounds import in_id_range
from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, RESEARCHER, has_role, role_required
from curation.models import ReviewItem, ReviewStage
from curation.reviews import assignment, explorer, explorer_panel


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
    rows = explorer.rows_for(page["rows"], request.user, show_gold=is_admin, own_only=own_only)
    previews = explorer_panel.previews(stage, page["rows"])
    assignees = assignment.assignees_of([it.pk for it in page["rows"]]) if staff else {}
    for row in rows:
        row["preview"] = previews[row["item"].pk]
        row["assigned"] = assignees.get(row["item"].pk, [])
    columns = [c for c in explorer_panel.COLUMNS if (c[0] != "gold" or is_admin) and (c[0] != "assigned" or staff)]
    return render(request, "curation/explore.html", {
        "stage": stage, "stages": ReviewStage.choices, "q": qry, "page": page, "rows": rows,
        "columns": columns, "is_admin": is_admin,
        "choices": explorer.choices(stage, own_only), "own_only": own_only,
        "can_bulk": staff, "is_staff": staff, "base_query": base,
        "here": request.get_full_path(), "assign_modes": list(assignment.MODES.items()),
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
    if request.POST.get("scope") == "filter":
        # The whole filter: the query travels in `next`; the count the user confirmed must still
        # be what the filter matches, or nothing happens (the list changed under them).
        params = QueryDict(urlsplit(back).query)
        qry = explorer.parse(stage, params)
        matched = explorer.items(qry, request.user)
        total = matched.count()
        confirmed = request.POST.get("confirm_count") or ""
        if not (confirmed.isdigit() and len(confirmed) < 10 and int(confirmed) == total):
            messages.error(request, f"The filter now matches {total} item(s); check the list and confirm again.")
            return redirect(back)
        if total > explorer_panel.BULK_FILTER_MAX:
            messages.error(request, f"At most {explorer_panel.BULK_FILTER_MAX} items at once; narrow the filter.")
            return redirect(back)
        ids = list(matched.values_list("pk", flat=True))
    action = request.POST.get("action", "")
    if action in ("assign", "release"):
        _assign(request, stage, ids, action)
        return redirect(back)
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


def _assign(request: HttpRequest, stage: str, ids: list[int], action: str) -> None:
    """The explorer's "Assign" and "Release assignment" on the selection (issue #30)."""
    text = (request.POST.get("assignees") or "")[:2000]
    mode = request.POST.get("mode", "")
    try:
        if action == "release":
            result = assignment.release(actor=request.user, item_ids=ids, annotators=assignment.parse_names(text),
                                        stage=stage)
            messages.success(request, f"{result['released']} assignment(s) released on {result['items']} item(s).")
            return
        if mode == "percent":
            result = assignment.assign(actor=request.user, item_ids=ids, mode=mode, stage=stage,
                                       shares=assignment.parse_shares(text))
        else:
            result = assignment.assign(actor=request.user, item_ids=ids, mode=mode, stage=stage,
                                       annotators=assignment.parse_names(text))
    except assignment.AssignError as exc:
        messages.error(request, f"Nothing assigned: {exc}" if action == "assign" else f"Nothing released: {exc}")
        return
    per = ", ".join(f"{name} {n}" for name, n in result["per_annotator"].items())
    messages.success(request, f"{result['assignments']} assignment(s) on {result['items']} item(s) ({per}); "
                              f"{result['unchanged']} item(s) had no free place or were assigned already.")


@require_GET
@role_required(ANNOTATOR, ADJUDICATOR, RESEARCHER)
def panel(request: HttpRequest, pk: int) -> HttpResponse:
    """The side panel: the item as the review page shows it, as an HTML fragment."""
    if not in_id_range(pk):
        raise Http404("No such review item.")
    item = get_object_or_404(ReviewItem, pk=pk)
    try:
        ctx = explorer_panel.panel_context(request.user, item)
    except explorer_panel.PanelError as exc:
        raise PermissionDenied(str(exc)) from exc
    return render(request, "curation/_explore_panel.html", ctx)


@require_POST
@role_required(ADMIN)
def gold(request: HttpRequest, pk: int) -> HttpResponse:
    """The explorer's gold toggle: expected = accept | reject marks, empty unmarks."""
    if not in_id_range(pk):
        raise Http404("No such review item.")
    item = get_object_or_404(ReviewItem, pk=pk)
    back = request.POST.get("next") or ""
    if not back.startswith(reverse("curation:explore", args=[item.stage])):
        back = reverse("curation:explore", args=[item.stage])
    expected = request.POST.get("expected", "")
    if expected not in ("", "accept", "reject"):
        messages.error(request, "The known verdict must be accept or reject.")
        return redirect(back)
    try:
        done = explorer_panel.gold_toggle(actor=request.user, item_id=item.pk, expected=expected)
    except explorer_panel.PanelError as exc:
        messages.error(request, f"{item}: {exc}")
    else:
        messages.success(request, f"{item}: {done}.")
    return redirect(back)

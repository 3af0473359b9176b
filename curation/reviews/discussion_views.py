"""Pages for one's own verdicts, changing a verdict, an item's discussion and notifications."""
from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.functional import SimpleLazyObject
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from almita_web.roles import ADJUDICATOR, ALL_ROLES, ANNOTATOR, role_required
from curation.models import ReviewStage, Verdict
from curation.reviews import discussion
from curation.reviews import queue as item_queue
from curation.reviews.claims import CurationError

PAGE_SIZE = 50


def notifications_context(request: HttpRequest) -> dict:
    """The navigation's unread count, queried only by a page that shows it."""
    user = getattr(request, "user", None)
    return {"unread_notifications": SimpleLazyObject(lambda: discussion.unread_count(user))}


def _back(request: HttpRequest, fallback: str) -> str:
    target = request.POST.get("next") or ""
    # A path on this site only: redirect() reads a bare word ("abc") as a view name (a 500).
    if target.startswith("/") and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                                  require_https=request.is_secure()):
        return target
    return fallback


@require_GET
@role_required(ANNOTATOR)
def my_verdicts(request: HttpRequest) -> HttpResponse:
    stage = request.GET.get("stage", "")
    stage = stage if stage in ReviewStage.values else ""
    verdict = request.GET.get("verdict", "")
    verdict = verdict if verdict in Verdict.values else ""
    status = request.GET.get("status", "")
    status = status if status in discussion.STATUS_LABELS else ""
    rows = discussion.my_verdicts(annotator=request.user, stage=stage, verdict=verdict, status=status)
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "curation/my_verdicts.html", {
        "page": page, "rows": [discussion.describe_own(r) for r in page.object_list],
        "stage": stage, "verdict": verdict, "status": status,
        "stages": ReviewStage.choices, "verdicts": Verdict.choices, "statuses": discussion.STATUS_LABELS.items(),
        "filtered": bool(stage or verdict or status),
    })


@require_POST
@role_required(ANNOTATOR)
def change_verdict(request: HttpRequest, pk: int) -> HttpResponse:
    item = item_queue.item_by_id(pk)
    if item is None:
        raise Http404("No such review item.")
    back = _back(request, f"/curation/items/{pk}/")
    verdict = request.POST.get("verdict", "")
    if verdict not in Verdict.values:
        messages.error(request, "Choose accept or reject.")
        return redirect(back)
    try:
        discussion.verdict_change(annotator=request.user, item_id=pk, verdict=verdict,
                                  reason_codes=request.POST.getlist("reason_codes")[:50],
                                  comment=request.POST.get("comment", "")[:5000])
    except CurationError as exc:
        messages.error(request, str(exc))
        return redirect(back)
    messages.success(request, f"Your verdict on {item} is now {Verdict(verdict).label.lower()}.")
    return redirect(back)


@require_POST
@role_required(ANNOTATOR, ADJUDICATOR)
def comment(request: HttpRequest, pk: int) -> HttpResponse:
    item = item_queue.item_by_id(pk)
    if item is None:
        raise Http404("No such review item.")
    back = _back(request, f"/curation/items/{pk}/")
    try:
        discussion.comment_add(author=request.user, item_id=pk, body=request.POST.get("body", ""))
    except CurationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Comment posted.")
    return redirect(back + "#discussion")


@role_required(*ALL_ROLES)
def notifications(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        n = discussion.mark_read(request.user)
        messages.info(request, f"{n} notification(s) marked read.")
        return redirect("curation:notifications")
    page = Paginator(discussion.notifications_of(request.user), PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "curation/notifications.html", {"page": page})

"""What each role's home page shows (issue #31): what is waiting for me, my progress, and my
releases, runs and jobs. A few grouped queries per role, none per row.

Blindness: an annotator's part counts only their own work and what they may take now
(curation's annotator_available and annotator_progress), which never move with another
annotator's verdict.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from django.db.models import Count

from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, RESEARCHER
from curation.agreement import services as agreement_services
from curation.models import ItemState, Release, Resolution, ReviewItem, ReviewStage
from curation.reviews import services as review_services
from curation.reviews.services import Effective, effective_q
from evaluation.models import EvaluationRun, SessionRun
from generation.models import GenerationJob

CAP = 100  # annotator_available counts to just past this; the queue page shows "100+" too
RECENT = 5


def annotator_part(user) -> dict[str, Any]:
    available = agreement_services.annotator_available(annotator=user)
    mine = {r["stage"]: r for r in agreement_services.annotator_progress(annotator=user)}
    claims = review_services.held_claims(annotator=user)
    held = Counter(c.item.stage for c in claims)
    stages, done_all, open_all = [], 0, 0
    for stage, label in ReviewStage.choices:
        done = mine.get(stage, {}).get("reviews", 0)
        avail = available[stage]
        done_all, open_all = done_all + done, open_all + min(avail, CAP) + held[stage]
        stages.append({"stage": stage, "label": label, "done": done, "skips": mine.get(stage, {}).get("skips", 0),
                       "available": avail, "more": avail > CAP, "held": stage in held,
                       "percent": round(100 * done / (done + min(avail, CAP) + held[stage])) if done + avail + held[stage] else 0})
    assigned = sum(r.get("assigned", 0) for r in mine.values())
    assigned_done = sum(r.get("assigned_done", 0) for r in mine.values())
    return {"stages": stages, "done": done_all, "open": open_all, "held": len(claims), "more": any(s["more"] for s in stages),
            "assigned": assigned, "assigned_done": assigned_done,
            "percent": round(100 * done_all / (done_all + open_all)) if done_all + open_all else 0,
            "claims": claims}


def adjudicator_part(user, is_admin: bool) -> dict[str, Any]:
    awaiting = ReviewItem.objects.filter(effective_q(Effective.AWAITING))
    if not is_admin:  # another adjudicator decides the items one reviewed (services.may_adjudicate)
        awaiting = awaiting.exclude(reviews__annotator=user)
    counts = dict(awaiting.order_by().values_list("stage").annotate(n=Count("pk")))
    funnel = agreement_services.stage_funnel()
    return {
        "stages": [{"stage": s, "label": label, "waiting": counts.get(s, 0)} for s, label in ReviewStage.choices],
        "waiting": sum(counts.values()),
        "decided_by_me": Resolution.objects.filter(adjudicator=user).count(),
        "funnel": funnel,
        "decided": sum(r["decided"] for r in funnel),
        "live": sum(r["items"] - r["excluded"] for r in funnel),
    }


def researcher_part(user) -> dict[str, Any]:
    releases = list(Release.objects.select_related("created_by").order_by("-created_at", "-id")[:RECENT])
    runs = list(EvaluationRun.objects.select_related("agent", "release", "created_by")
                .defer("metrics").order_by("-created_at", "-id")[:RECENT])
    sessions = list(SessionRun.objects.select_related("agent", "release", "created_by")
                    .defer("metrics").order_by("-created_at", "-id")[:RECENT])
    return {"releases": releases, "runs": runs, "sessions": sessions,
            "active_runs": EvaluationRun.objects.filter(status__in=["queued", "running"]).count()
            + SessionRun.objects.filter(status__in=["queued", "running"]).count()}


def admin_part() -> dict[str, Any]:
    jobs = list(GenerationJob.objects.select_related("created_by").only(
        "pk", "name", "status", "created_at", "created_by__username").order_by("-created_at", "-id")[:RECENT])
    return {"jobs": jobs, "active_jobs": GenerationJob.objects.filter(status__in=["queued", "running",
                                                                                  "cancelling"]).count()}


def home_context(user, roles: set[str]) -> dict[str, Any]:
    is_admin = ADMIN in roles
    ctx: dict[str, Any] = {"has_role": bool(roles)}
    if is_admin or ANNOTATOR in roles:
        ctx["annotator"] = annotator_part(user)
    if is_admin or ADJUDICATOR in roles or RESEARCHER in roles:
        part = adjudicator_part(user, is_admin)
        if not (is_admin or ADJUDICATOR in roles):
            part["stages"] = None  # researchers see the curation progress, not an adjudication queue
        ctx["curation"] = part
    if is_admin or RESEARCHER in roles:
        ctx["research"] = researcher_part(user)
    if is_admin:
        ctx["admin"] = admin_part()
    ctx["item_states"] = ItemState
    return ctx

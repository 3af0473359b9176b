"""Curation economics (i15): what the accepted tests of a job or a release cost in LLM spend and in
people's minutes.

Annotator minutes: for every verdict, the time from the annotator's claim on that item (the latest
claim event before the verdict) to the verdict. Adjudication minutes: for every resolution, the
time since the adjudicator's previous recorded action. Either interval is left out when it is
longer than the idle threshold (settings.CURATION_IDLE_MINUTES, default 10): the person was away,
and counting the break would make the figures meaningless. Times come from the audit log.
"""
from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any, Iterable

from django.conf import settings
from django.db.models import Q, QuerySet, Sum

from curation.models import AuditEvent, ReviewItem
from curation.reviews.services import STAGE_MODELS
from generation.models import CurationStatus, GenerationJob, LLMCall, Test


def idle_threshold() -> timedelta:
    return timedelta(minutes=settings.CURATION_IDLE_MINUTES)


def items_of_jobs(job_ids: Iterable[int]) -> list[int]:
    """Review items whose artifact one of the jobs made."""
    job_ids = list(job_ids)
    ids: list[int] = []
    for stage, model in STAGE_MODELS.items():
        objs = model.objects.filter(job_id__in=job_ids).values_list("pk", flat=True)
        ids += ReviewItem.objects.filter(stage=stage, object_id__in=objs).values_list("pk", flat=True)
    return ids


def review_minutes(item_ids: Iterable[int] | QuerySet) -> dict[str, Any]:
    """Annotator and adjudication minutes spent on the items, idle stretches left out.

    ``item_ids``: ids, or a query of ReviewItem ids (run as a subquery: a release's items can be
    tens of thousands, too many to send back as a list of parameters)."""
    if not isinstance(item_ids, QuerySet):
        item_ids = set(item_ids)
    limit = idle_threshold()
    events = (AuditEvent.objects.filter(item_id__in=item_ids, action__in=[
        AuditEvent.Action.CLAIM, AuditEvent.Action.VERDICT, AuditEvent.Action.RESOLVE])
        .order_by("at", "id").values_list("actor_id", "item_id", "action", "at"))
    claims: dict[tuple[int, int], Any] = {}
    annot = adj = timedelta()
    verdicts = resolutions = left_out = 0
    resolvers = set()
    rows = list(events)
    for actor, item, action, at in rows:
        if action == AuditEvent.Action.CLAIM:
            claims[(actor, item)] = at
        elif action == AuditEvent.Action.VERDICT:
            verdicts += 1
            start = claims.pop((actor, item), None)
            if start is None or at - start > limit:
                left_out += 1
            else:
                annot += at - start
        else:
            resolutions += 1
            resolvers.add(actor)
    # An adjudicator's previous action can be on any item (they work through a list).
    if resolvers and isinstance(item_ids, QuerySet):
        item_ids = set(item_ids)
    for actor in resolvers:
        mine = list(AuditEvent.objects.filter(actor_id=actor).order_by("at", "id").values_list("item_id", "action", "at"))
        for (_, _, before), (item, action, at) in zip(mine, mine[1:]):
            if action != AuditEvent.Action.RESOLVE or item not in item_ids:
                continue
            if at - before > limit:
                left_out += 1
            else:
                adj += at - before
    return {"annotator_minutes": annot.total_seconds() / 60, "adjudication_minutes": adj.total_seconds() / 60,
            "verdicts": verdicts, "resolutions": resolutions, "left_out_as_idle": left_out,
            "idle_threshold_minutes": limit.total_seconds() / 60}


def economics(*, job_ids: Iterable[int], accepted_tests: int, item_ids: Iterable[int] | None = None) -> dict[str, Any]:
    job_ids = list(job_ids)
    cost = LLMCall.objects.filter(job_id__in=job_ids).aggregate(c=Sum("cost_usd"))["c"] or Decimal(0)
    minutes = review_minutes(items_of_jobs(job_ids) if item_ids is None else item_ids)
    people = minutes["annotator_minutes"] + minutes["adjudication_minutes"]
    per = (lambda x: x / accepted_tests) if accepted_tests else (lambda x: None)
    return {"llm_cost_usd": float(cost), **minutes, "accepted_tests": accepted_tests,
            "cost_per_accepted_test": per(float(cost)), "minutes_per_accepted_test": per(people)}


def job_economics(job: GenerationJob) -> dict[str, Any]:
    accepted = Test.objects.filter(job=job, status=CurationStatus.ACCEPTED).count()
    return economics(job_ids=[job.pk], accepted_tests=accepted)


def release_economics(release) -> dict[str, Any]:
    """For a release: the LLM cost of the jobs that made its items, the minutes spent reviewing its
    conversations and everything above them, per test in the release."""
    from curation.loop.services import release_conversations

    convs = release_conversations(release)
    of_stage = {
        "conversation": convs.values("pk"),
        "conversation_graph": convs.values("path__conversation_graph_id"),
        "flowgraph": convs.values("path__conversation_graph__flowgraph_id"),
        "procedure": convs.values("procedure_id"),
    }
    which = Q(pk__in=[])
    for stage, ids in of_stage.items():
        which |= Q(stage=stage, object_id__in=ids)
    items = ReviewItem.objects.filter(which).values_list("pk", flat=True)
    jobs = [j for j in (release.manifest or {}).get("jobs", []) if j is not None]
    return economics(job_ids=jobs, accepted_tests=release.entries.count(), item_ids=items)


def format_economics(e: dict[str, Any]) -> list[str]:
    def money(v):
        return "–" if v is None else f"${v:.4f}"

    def mins(v):
        return "–" if v is None else f"{v:.1f} min"

    return [
        f"- LLM cost: ${e['llm_cost_usd']:.4f}",
        f"- Annotator minutes (claim to verdict): {e['annotator_minutes']:.1f} over {e['verdicts']} verdicts; "
        f"adjudication minutes: {e['adjudication_minutes']:.1f} over {e['resolutions']} resolutions "
        f"({e['left_out_as_idle']} intervals over {e['idle_threshold_minutes']:.0f} min left out as idle)",
        f"- Per accepted test ({e['accepted_tests']}): {money(e['cost_per_accepted_test'])} and "
        f"{mins(e['minutes_per_accepted_test'])}",
    ]


def job_panel(job: GenerationJob) -> dict[str, Any]:
    return {"economics": job_economics(job)}

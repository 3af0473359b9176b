"""Review items for pipeline artifacts, their lineage, and the status cascade.

Dependencies point curation → generation only, so generation never creates review items:
:func:`items_sync` finds reviewable artifacts that have none and creates them in bulk. The queue
calls it (throttled); the demo loader and jobs may call it directly.

The cascade is a recomputation, not a diff: an artifact's status follows from its own decision and
its ancestors' decisions, so reversing a decision and recomputing restores the earlier statuses.
It descends only below artifacts that start or stop excluding their descendants (the statuses
further down follow from that alone), so a consensus accept costs a few queries, not a subtree.
"""
from __future__ import annotations

import time
from collections import Counter
from typing import Any

from django.conf import settings
from django.db import connection, models, transaction

from curation.models import AuditEvent, Claim, ItemState, ReviewItem, ReviewStage, Verdict
from curation.reviews.artifacts import artifact_for  # noqa: F401  (re-exported)
from generation.models import (
    Api,
    Conversation,
    ConversationGraph,
    CurationStatus,
    Flowgraph,
    Procedure,
    SampledPath,
    Test,
)
from projects.scoping import rows_to_write

STAGE_MODELS: dict[str, type[models.Model]] = {
    ReviewStage.PROCEDURE: Procedure,
    ReviewStage.FLOWGRAPH: Flowgraph,
    ReviewStage.CONVERSATION_GRAPH: ConversationGraph,
    ReviewStage.CONVERSATION: Conversation,
}
STAGE_ORDER = list(STAGE_MODELS)
_ITEMS = ReviewItem._meta.db_table
_STOPS = (CurationStatus.REJECTED, CurationStatus.EXCLUDED)  # statuses that exclude the descendants
ADJUDICATION = "adjudication"
STRICT = "strict"


def required_reviews_for(stage: str, project=None) -> int:
    """The project's reviews per item (its settings page; default 2); settings.REVIEWS_PER_STAGE =
    {"conversation": 1, ...} overrides it per stage for every project."""
    from projects.context import project_or_default

    return (project or project_or_default()).reviews_needed(stage)


def policy_for(stage: str) -> str:
    """settings.CURATION_POLICIES = {"flowgraph": "strict"}: the paper's rule (any reject rejects)."""
    policies = getattr(settings, "CURATION_POLICIES", None) or {}
    policy = policies.get(stage, ADJUDICATION)
    if policy not in (ADJUDICATION, STRICT):
        raise ValueError(f"CURATION_POLICIES[{stage!r}] = {policy!r}; use 'adjudication' or 'strict'")
    return policy


def ancestors(stage: str, object_id: int) -> list[tuple[str, int]]:
    """Reviewable ancestors of an artifact, top down, as (stage, object_id)."""
    if stage == ReviewStage.PROCEDURE:
        return []
    if stage == ReviewStage.FLOWGRAPH:
        pid = Flowgraph.objects.filter(pk=object_id).values_list("procedure_id", flat=True).first()
        return [(ReviewStage.PROCEDURE, pid)] if pid else []
    if stage == ReviewStage.CONVERSATION_GRAPH:
        row = ConversationGraph.objects.filter(pk=object_id).values_list("flowgraph__procedure_id", "flowgraph_id").first()
        return [(ReviewStage.PROCEDURE, row[0]), (ReviewStage.FLOWGRAPH, row[1])] if row else []
    row = (
        Conversation.objects.filter(pk=object_id)
        .values_list("procedure_id", "path__conversation_graph__flowgraph_id", "path__conversation_graph_id")
        .first()
    )
    if not row:
        return []
    out = [(ReviewStage.PROCEDURE, row[0])]
    if row[2]:
        out += [(ReviewStage.FLOWGRAPH, row[1]), (ReviewStage.CONVERSATION_GRAPH, row[2])]
    return out


def _ancestor_sql(stage: str) -> tuple[str, list[tuple[str, str]]]:
    """FROM clause for one artifact `a` of `stage`, and its reviewable ancestors' (stage, id column)."""
    fg, cg, path = Flowgraph._meta.db_table, ConversationGraph._meta.db_table, SampledPath._meta.db_table
    if stage == ReviewStage.FLOWGRAPH:
        return f"{fg} a", [(ReviewStage.PROCEDURE, "a.procedure_id")]
    if stage == ReviewStage.CONVERSATION_GRAPH:
        return (f"{cg} a JOIN {fg} f ON f.id = a.flowgraph_id",
                [(ReviewStage.PROCEDURE, "f.procedure_id"), (ReviewStage.FLOWGRAPH, "a.flowgraph_id")])
    return (f"{Conversation._meta.db_table} a LEFT JOIN {path} p ON p.id = a.path_id"
            f" LEFT JOIN {cg} g ON g.id = p.conversation_graph_id",
            [(ReviewStage.PROCEDURE, "a.procedure_id"), (ReviewStage.FLOWGRAPH, "g.flowgraph_id"),
             (ReviewStage.CONVERSATION_GRAPH, "p.conversation_graph_id")])


def blocked_above(stage: str, object_id: int) -> bool:
    """True when a reviewable ancestor has been rejected or is excluded (one query: an index probe
    per ancestor). An ancestor excluded by a rejection further up is also this artifact's
    ancestor, so "excluded" adds only the ancestors withheld in the explorer."""
    if stage == ReviewStage.PROCEDURE:
        return False
    source, ups = _ancestor_sql(stage)
    probes = " OR ".join(
        f"EXISTS (SELECT 1 FROM {_ITEMS} r WHERE r.stage = %s AND r.object_id = {col}"
        " AND ((r.state = %s AND r.decision = %s) OR r.excluded = %s))" for _s, col in ups)
    params: list = []
    for s, _col in ups:
        params += [s, ItemState.DECIDED, Verdict.REJECT, True]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {probes} FROM {source} WHERE a.id = %s", params + [object_id])
        row = cursor.fetchone()
    return bool(row and row[0])


# --------------------------------------------------------------------------- cascade


def _children(stage: str, ids: list[int]) -> list[tuple[str, list[int]]]:
    if not ids:
        return []
    if stage == ReviewStage.PROCEDURE:
        return [
            (ReviewStage.FLOWGRAPH, list(Flowgraph.objects.filter(procedure_id__in=ids).values_list("pk", flat=True))),
            # Conversations written straight from a procedure (A.7) hang off the procedure itself.
            (ReviewStage.CONVERSATION, list(
                Conversation.objects.filter(procedure_id__in=ids, path__isnull=True).values_list("pk", flat=True))),
        ]
    if stage == ReviewStage.FLOWGRAPH:
        return [(ReviewStage.CONVERSATION_GRAPH, list(
            ConversationGraph.objects.filter(flowgraph_id__in=ids).values_list("pk", flat=True)))]
    if stage == ReviewStage.CONVERSATION_GRAPH:
        return [(ReviewStage.CONVERSATION, list(
            Conversation.objects.filter(path__conversation_graph_id__in=ids).values_list("pk", flat=True)))]
    return []


def _in(ids) -> str:
    return "(" + ", ".join(["%s"] * len(ids)) + ")"


def _run(cursor, sql: str, params: list, ids) -> None:
    cursor.execute(sql, params)


def _set_status(model, column: str, ids: list[int], status: str, summary: Counter) -> None:
    """status = `status` on the rows whose `column` is in `ids` (plain SQL: on every conclusion)."""
    with connection.cursor() as cursor:
        _run(cursor, f"UPDATE {model._meta.db_table} SET status = %s WHERE {column} IN {_in(ids)} AND status <> %s",
             [status, *ids, status], ids)
        changed = cursor.rowcount
    if changed:
        summary[f"{model._meta.model_name}:{status}"] += changed


def _recompute(stage: str, ids: list[int], blocked: bool, summary: Counter, actor=None) -> None:
    if not ids:
        return
    model = STAGE_MODELS[stage]
    # Whether each artifact stopped its descendants before this recomputation (rejected or
    # excluded): when that does not change, the descendants' statuses cannot change either.
    with connection.cursor() as cursor:
        _run(cursor, f"SELECT id FROM {model._meta.db_table} WHERE id IN {_in(ids)} AND status IN (%s, %s)",
             [*ids, *_STOPS], ids)
        stopped_before = {row[0] for row in cursor.fetchall()}
        _run(cursor, f"SELECT object_id, decision, withheld FROM {_ITEMS} WHERE stage = %s AND object_id IN {_in(ids)}"
             " AND (state = %s OR withheld = %s)", [stage, *ids, ItemState.DECIDED, True], ids)
        rows = cursor.fetchall()
    decisions = {oid: d for oid, d, _w in rows}
    # Withheld in the explorer: excluded, with its descendants, whatever its ancestors say.
    withheld = [oid for oid, _d, w in rows if w] if not blocked else []
    if blocked:
        groups = {CurationStatus.EXCLUDED: ids}
    else:
        groups = {CurationStatus.ACCEPTED: [], CurationStatus.REJECTED: [], CurationStatus.PENDING: [],
                  CurationStatus.EXCLUDED: withheld}
        held = set(withheld)
        for oid in ids:
            if oid in held:
                continue
            d = decisions.get(oid)
            key = {Verdict.ACCEPT: CurationStatus.ACCEPTED, Verdict.REJECT: CurationStatus.REJECTED}.get(d, CurationStatus.PENDING)
            groups[key].append(oid)
    for status, group in groups.items():
        if not group:
            continue
        _set_status(model, "id", group, status, summary)
        if stage == ReviewStage.PROCEDURE:
            # The APIs are reviewed together with their procedure and share its status.
            _set_status(Api, "procedure_id", group, status, summary)
        if stage == ReviewStage.CONVERSATION_GRAPH:
            path_status = CurationStatus.PENDING if status in (CurationStatus.ACCEPTED, CurationStatus.PENDING) else CurationStatus.EXCLUDED
            _set_status(SampledPath, "conversation_graph_id", group, path_status, summary)
        if stage == ReviewStage.CONVERSATION:
            # The tests of an accepted conversation count as curated.
            test_status = {CurationStatus.ACCEPTED: CurationStatus.ACCEPTED, CurationStatus.PENDING: CurationStatus.PENDING}.get(
                status, CurationStatus.EXCLUDED)
            _set_status(Test, "conversation_id", group, test_status, summary)
    if withheld:
        _items_set_excluded(stage, withheld, True, summary, actor)
        held = set(withheld)
        _items_set_excluded(stage, [i for i in ids if i not in held], blocked, summary, actor)
    else:
        _items_set_excluded(stage, ids, blocked, summary, actor)
    stopped = set(ids) if blocked else set(groups[CurationStatus.REJECTED]) | set(withheld)
    # Only the subtrees whose parent changed between stopping and not stopping are recomputed:
    # accepting a pending item (the usual consensus) touches nothing below it.
    flipped = [i for i in ids if (i in stopped) != (i in stopped_before)]
    for child_stage, child_ids in _children(stage, [i for i in flipped if i in stopped]):
        _recompute(child_stage, child_ids, True, summary, actor)
    for child_stage, child_ids in _children(stage, [i for i in flipped if i not in stopped]):
        _recompute(child_stage, child_ids, False, summary, actor)


def _items_set_excluded(stage: str, ids: list[int], blocked: bool, summary: Counter, actor) -> None:
    """Exclude (or restore) the review items of these artifacts, with one audit event per item.

    Excluding closes the claims the exclusion makes moot, so nobody keeps holding an item that is
    out of curation. The workflow columns (state, decision, reviews) stay as they are: restoring
    puts the item back in the queue or on the adjudication list exactly where it was.
    """
    if not ids:
        return
    with connection.cursor() as cursor:
        _run(cursor, f"SELECT id, state, decision, review_count FROM {_ITEMS} WHERE stage = %s"
             f" AND object_id IN {_in(ids)} AND excluded <> %s", [stage, *ids, blocked], ids)
        changing = cursor.fetchall()
    if not changing:
        return
    pks = [row[0] for row in changing]
    ReviewItem.objects.filter(pk__in=pks).update(excluded=blocked)
    closed: Counter = Counter()
    if blocked:
        for item_id, annotator_id in Claim.objects.filter(item_id__in=pks).values_list("item_id", "annotator_id"):
            closed[item_id] += 1
        rows_to_write(Claim).filter(item_id__in=pks).delete()
    action = AuditEvent.Action.EXCLUDE if blocked else AuditEvent.Action.RESTORE
    AuditEvent.objects.bulk_create([
        AuditEvent(actor=actor, action=action, item_id=pk,
                   before={"excluded": not blocked, "state": state, "decision": decision, "review_count": n},
                   after={"excluded": blocked, "claims_closed": closed.get(pk, 0)})
        for pk, state, decision, n in changing
    ], batch_size=1000)
    summary["review items:" + ("excluded" if blocked else "restored")] += len(pks)
    if closed:
        summary["claims:closed"] += sum(closed.values())


def cascade_apply(item: ReviewItem, actor=None) -> dict[str, int]:
    """Recompute statuses of the item's artifact and everything below it; returns the changes."""
    summary: Counter = Counter()
    _recompute(item.stage, [item.object_id], blocked_above(item.stage, item.object_id), summary, actor)
    return dict(summary)


def descendant_statuses(item: ReviewItem) -> dict[str, dict[str, int]]:
    """{"conversation graphs": {"excluded": 2}, ...} for everything below the item's artifact."""
    out: dict[str, dict[str, int]] = {}

    def count(label: str, qs) -> None:
        rows = qs.values("status").annotate(n=models.Count("pk")).order_by("status")
        if rows:
            out[label] = {r["status"]: r["n"] for r in rows}

    oid = item.object_id
    if item.stage == ReviewStage.PROCEDURE:
        count("APIs", Api.objects.filter(procedure_id=oid))
        count("flowgraphs", Flowgraph.objects.filter(procedure_id=oid))
        count("conversation graphs", ConversationGraph.objects.filter(flowgraph__procedure_id=oid))
        count("conversations", Conversation.objects.filter(procedure_id=oid))
        count("tests", Test.objects.filter(conversation__procedure_id=oid))
    elif item.stage == ReviewStage.FLOWGRAPH:
        count("conversation graphs", ConversationGraph.objects.filter(flowgraph_id=oid))
        count("sampled paths", SampledPath.objects.filter(conversation_graph__flowgraph_id=oid))
        count("conversations", Conversation.objects.filter(path__conversation_graph__flowgraph_id=oid))
        count("tests", Test.objects.filter(conversation__path__conversation_graph__flowgraph_id=oid))
    elif item.stage == ReviewStage.CONVERSATION_GRAPH:
        count("sampled paths", SampledPath.objects.filter(conversation_graph_id=oid))
        count("conversations", Conversation.objects.filter(path__conversation_graph_id=oid))
        count("tests", Test.objects.filter(conversation__path__conversation_graph_id=oid))
    else:
        count("tests", Test.objects.filter(conversation_id=oid))
    return out


# --------------------------------------------------------------------------- items_sync

_last_sync: dict[int | None, float] = {}  # per current project (None: every project)
SYNC_INTERVAL_SECONDS = 5.0


def _has_warnings(validation: Any) -> bool:
    return bool(validation) if isinstance(validation, (list, dict)) else False


@transaction.atomic
def items_sync() -> int:
    """Create the missing ReviewItems for every reviewable artifact; return how many were made.

    Idempotent: the unique (stage, object_id) constraint plus ignore_conflicts make two
    concurrent runs create each item once.
    """
    from projects.context import current_project_id
    from projects.models import Project

    any_rejected = ReviewItem.objects.filter(models.Q(state=ItemState.DECIDED, decision=Verdict.REJECT)
                                             | models.Q(excluded=True)).exists()
    created = 0
    projects: dict[int, Project] = {}
    for stage, model in STAGE_MODELS.items():
        existing = ReviewItem._base_manager.filter(stage=stage).values("object_id")
        found = list(model.objects.exclude(pk__in=existing).values_list("pk", "validation", "project_id"))
        if not found:
            continue
        # Each item belongs to its artifact's project, needs that project's reviews per item, and
        # exists only when the project reviews the stage (its settings page).
        if not projects:
            projects = {p.pk: p for p in Project.objects.all()}
        rows = [(pk, validation) for pk, validation, pid in found if projects[pid].reviews_stage(stage)]
        owner = {pk: pid for pk, _validation, pid in found}
        if not rows:
            continue
        warned = {pk for pk, validation in rows if _has_warnings(validation)}
        if stage == ReviewStage.PROCEDURE:
            for pid, validation in Api.objects.filter(procedure_id__in=[r[0] for r in rows]).values_list(
                "procedure_id", "validation"
            ):
                if _has_warnings(validation):
                    warned.add(pid)
        blocked = {pk for pk, _ in rows if any_rejected and blocked_above(stage, pk)}
        before = ReviewItem._base_manager.filter(stage=stage).count()
        ReviewItem.objects.bulk_create(
            [ReviewItem(stage=stage, object_id=pk, project_id=owner[pk],
                        required_reviews=required_reviews_for(stage, projects[owner[pk]]),
                        has_warnings=pk in warned, excluded=pk in blocked) for pk, _ in rows],
            ignore_conflicts=True, batch_size=500,
        )
        created += ReviewItem._base_manager.filter(stage=stage).count() - before
        if blocked:
            # Born under a rejected ancestor: excluded at once, with everything below it.
            _recompute(stage, sorted(blocked), True, Counter())
    _last_sync[current_project_id()] = time.monotonic()
    return created


def items_missing_likely() -> bool:
    """A cheap test (one index lookup per stage) for artifacts newer than every review item.

    Primary keys only grow, so an artifact without an item almost always has a higher id than
    any item's object: that is what jobs and imports produce. The full anti-join of items_sync
    runs only then (the queue page still runs it in full, for the rare out-of-order commit).
    """
    for stage, model in STAGE_MODELS.items():
        newest = model.objects.order_by("-pk").values_list("pk", flat=True).first()
        if newest is None:
            continue
        synced = (ReviewItem.objects.filter(stage=stage).order_by("-object_id")
                  .values_list("object_id", flat=True).first())
        if synced is None or newest > synced:
            return True
    return False


def items_sync_throttled(*, full: bool = True) -> None:
    """items_sync at most every few seconds per process: cheap enough to call from page views.

    ``full=False`` (claim-next, the hottest request) runs it only when items_missing_likely().
    """
    from projects.context import current_project_id

    pid = current_project_id()
    if time.monotonic() - _last_sync.get(pid, 0.0) >= SYNC_INTERVAL_SECONDS:
        if full or items_missing_likely():
            items_sync()
        else:
            _last_sync[pid] = time.monotonic()


def reset_sync_throttle() -> None:
    _last_sync.clear()

"""The queue's rule, written once in SQL that SQLite and Postgres both run (``Manager.raw``).

The candidate query (three anti-joins, a correlated count, a computed filter and a three-key
order) reads more plainly as SQL than as ORM expressions, and its shape is pinned by the plan
tests (tests/curation/reviews/test_review_path_queries.py); the one-row lookups are the ORM's:

* the item is open, in the stage, and not excluded by a rejected ancestor;
* the annotator has not reviewed it, skipped it, or claimed it already (an active claim);
* submitted reviews + the places others hold (an active claim or a holding assignment, each
  annotator once) < required reviews: an item assigned to someone is never offered to others
  beyond the places left (curation.models.assignments);
* order: items with validator warnings, then items closest to done, then oldest; claim-next asks
  first for the annotator's own assigned items (``assigned_only``), then for the rest.
"""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import connection

from curation.models import Assignment, Claim, ItemState, Review, ReviewItem, Skip
from projects.context import current_project_id

_ITEM = ReviewItem._meta.db_table
_REVIEW = Review._meta.db_table
_SKIP = Skip._meta.db_table
_CLAIM = Claim._meta.db_table
_ASSIGN = Assignment._meta.db_table
# An assignment `a` holds a place: active, and its annotator has neither reviewed nor skipped the
# item (curation.models.assignments.holding_q says the same for the ORM). One parameter: True.
_HOLDING = (f"a.active = %s AND NOT EXISTS (SELECT 1 FROM {_REVIEW} r3 WHERE r3.item_id = a.item_id"
            f" AND r3.annotator_id = a.annotator_id) AND NOT EXISTS (SELECT 1 FROM {_SKIP} s3"
            " WHERE s3.item_id = a.item_id AND s3.annotator_id = a.annotator_id)")
_GOLD = "curation_golditem"  # curation.models.GoldItem (that module imports this one's models)


def _ts(value: datetime):
    return connection.ops.adapt_datetimefield_value(value)


def _in_project(alias: str, params: list) -> str:
    """" AND <alias>.project_id = %s" in the current project (issue #30), "" with none set.
    On SQLite a unary plus keeps it from trading the queue index for the project column's; on
    Postgres the plus would hide the column from reviewitem_project_queue, and its plan walked
    the other projects' open items of the stage through reviewitem_queue_order first."""
    pid = current_project_id()
    if pid is None:
        return ""
    params.append(pid)
    plus = "+" if connection.vendor == "sqlite" else ""
    return f" AND {plus}{alias}.project_id = %s"


def _first(rows):
    return next(iter(rows), None)


def candidates(*, stage: str, annotator_id: int, now: datetime, exclude_ids: Sequence[int] = (),
               limit: int | None = None, lock: str = "", gold_only: bool = False, only_id: int | None = None,
               assigned_only: bool = False):
    """Items `annotator_id` may claim now, best first (a RawQuerySet of ReviewItem).

    ``lock``: "" (read only), "skip_locked" or "wait" — FOR UPDATE where the database has it
    (SQLite has none and needs none: its IMMEDIATE transactions already hold the write lock).
    ``only_id``: is this one item still a candidate (checked again under the lock before claiming)?
    ``assigned_only``: only the items assigned to the annotator (read from their assignments first),
    without the count of others' places (their assignment keeps one; see _candidate_where).
    """
    return ReviewItem.objects.raw(*_candidates_sql(stage=stage, annotator_id=annotator_id, now=now,
                                                   exclude_ids=exclude_ids, limit=limit, lock=lock,
                                                   gold_only=gold_only, only_id=only_id,
                                                   assigned_only=assigned_only))


def _candidates_sql(*, stage: str, annotator_id: int, now: datetime, exclude_ids: Sequence[int] = (),
                    limit: int | None = None, lock: str = "", gold_only: bool = False, only_id: int | None = None,
                    assigned_only: bool = False):
    where, params = _candidate_where(stage=stage, annotator_id=annotator_id, now=now, exclude_ids=exclude_ids,
                                     capacity=not assigned_only)
    if only_id is not None:
        where += " AND i.id = %s"
        params.append(only_id)
    source = f"{_ITEM} i"
    if assigned_only:
        # The annotator's few active assignments drive, each item then checked by key: SQLite
        # keeps a CROSS JOIN's order (with "i.id IN (…)" it walked the stage's open items in queue
        # order and probed each, 5 ms at 50,000 items); Postgres plans it by its statistics.
        source = f"{_ASSIGN} a4 CROSS JOIN {_ITEM} i"
        where += " AND a4.item_id = i.id AND a4.annotator_id = %s AND a4.active = %s"
        params += [annotator_id, True]
    if gold_only:  # the few gold items of the stage (a small table), so this stays cheap
        where += f" AND i.id IN (SELECT g.item_id FROM {_GOLD} g)"
    sql = f"SELECT i.* FROM {source} WHERE {where} ORDER BY i.has_warnings DESC, i.review_count DESC, i.id"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    features = connection.features
    if lock and features.has_select_for_update:
        of = " OF i" if assigned_only else ""  # the item's row, not the assignment's
        if lock == "skip_locked" and features.has_select_for_update_skip_locked:
            sql += f" FOR UPDATE{of} SKIP LOCKED"
        else:
            sql += f" FOR UPDATE{of}"
    return sql, params


def _candidate_where(*, stage: str, annotator_id: int, now: datetime, exclude_ids: Sequence[int] = (),
                     capacity: bool = True):
    """The rule as SQL. ``capacity=False`` leaves out the count of the places others hold: for the
    annotator's own assigned items, whose place their holding assignment keeps (a claim rechecks the
    count under the item's lock, as every claim does); Postgres plans it in a third of the time."""
    ts = _ts(now)
    # "i.excluded = %s" rather than "NOT i.excluded": SQLite matches only the former against the
    # queue index's third column, so with NOT it sorted every open item of the stage.
    params: list = [stage, ItemState.OPEN, False, annotator_id, annotator_id, annotator_id, ts]
    not_in = ""
    if exclude_ids:
        not_in = f" AND i.id NOT IN ({', '.join(['%s'] * len(exclude_ids))})"
    where = (
        "i.stage = %s AND i.state = %s AND i.excluded = %s"
        f" AND NOT EXISTS (SELECT 1 FROM {_REVIEW} r WHERE r.item_id = i.id AND r.annotator_id = %s)"
        f" AND NOT EXISTS (SELECT 1 FROM {_SKIP} s WHERE s.item_id = i.id AND s.annotator_id = %s)"
        f" AND NOT EXISTS (SELECT 1 FROM {_CLAIM} c WHERE c.item_id = i.id AND c.annotator_id = %s"
        " AND c.expires_at > %s)"
    )
    if capacity:
        # The places others hold: their active claims (the annotator has none here), and their
        # holding assignments on which they hold no active claim (so nobody is counted twice).
        where += (
            f" AND i.review_count + (SELECT COUNT(*) FROM {_CLAIM} c2 WHERE c2.item_id = i.id"
            " AND c2.expires_at > %s)"
            f" + (SELECT COUNT(*) FROM {_ASSIGN} a WHERE a.item_id = i.id AND a.annotator_id <> %s AND {_HOLDING}"
            f" AND NOT EXISTS (SELECT 1 FROM {_CLAIM} c3 WHERE c3.item_id = i.id AND c3.annotator_id = a.annotator_id"
            " AND c3.expires_at > %s)) < i.required_reviews"
        )
        params += [ts, annotator_id, True, ts]
    where += not_in
    params += list(exclude_ids)
    where += _in_project("i", params)
    return where, params


def count_candidates(*, stage: str, annotator_id: int, now: datetime, cap: int | None = None) -> int:
    """How many items `annotator_id` could claim now in `stage` (the same rule as candidates).

    ``cap``: stop counting past it (returns at most cap + 1), so the queue page's figure costs
    the same with 500 or 50,000 open items.
    """
    where, params = _candidate_where(stage=stage, annotator_id=annotator_id, now=now)
    sql = f"SELECT 1 FROM {_ITEM} i WHERE {where}"
    if cap is not None:
        sql += f" LIMIT {int(cap) + 1}"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM ({sql}) AS candidates", params)
        return cursor.fetchone()[0]


def first_candidate(**kwargs) -> ReviewItem | None:
    return _first(ReviewItem.objects.raw(*_candidates_sql(limit=1, **kwargs)))


def gold_share(*, stage: str) -> float:
    """The share of gold items among the stage's open, not excluded items (0.0 when it has none).

    Claim-next draws a gold item with this probability, so seeded copies (new rows, hence last
    in id order) are spread through an annotator's session instead of waiting at its end.
    """
    # Gold rows first, each item looked up by key: a scalar subquery is never turned into a join,
    # so no plan can walk the stage's open items instead (Postgres did, 0.2 ms per claim at 500
    # open items, when its statistics had not yet seen the gold table).
    gold_params: list = [stage, ItemState.OPEN]
    in_gold = _in_project("i", gold_params)
    item_params: list = [stage, ItemState.OPEN]
    in_items = _in_project("i", item_params)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {_GOLD} g WHERE (SELECT i.stage = %s AND i.state = %s"
                f" AND NOT i.excluded{in_gold} FROM {_ITEM} i WHERE i.id = g.item_id)", gold_params)
        gold = cursor.fetchone()[0]
        if not gold:
            return 0.0
        cursor.execute(f"SELECT COUNT(*) FROM {_ITEM} i WHERE i.stage = %s AND i.state = %s AND NOT i.excluded"
                       f"{in_items}", item_params)
        return gold / max(1, cursor.fetchone()[0])


def held_item(*, stage: str, annotator_id: int, now: datetime) -> ReviewItem | None:
    """The open item of `stage` the annotator holds an active claim on (oldest claim first)."""
    # The annotator's claims first, each item checked by key: subqueries in this shape are never
    # turned into a join, so no plan can walk the stage's open items and probe each for a claim
    # (as a join it once took 1.6 ms a call under bench/review_http.py; 0.12 ms mean in this shape).
    params: list = [annotator_id, _ts(now), stage, ItemState.OPEN]
    in_project = _in_project("o", params)
    sql = (
        f"SELECT i.* FROM {_ITEM} i WHERE i.id = (SELECT c.item_id FROM {_CLAIM} c"
        " WHERE c.annotator_id = %s AND c.expires_at > %s"
        f" AND (SELECT o.stage = %s AND o.state = %s AND NOT o.excluded{in_project} FROM {_ITEM} o"
        " WHERE o.id = c.item_id)"
        " ORDER BY c.claimed_at, c.id LIMIT 1)"
    )
    return _first(ReviewItem.objects.raw(sql, params))


def active_claims_of_others(*, item_id: int, annotator_id: int, now: datetime) -> int:
    """The places on the item other annotators hold: an active claim or a holding assignment,
    each annotator counted once (one statement; read under the item's lock)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COUNT(*) FROM (SELECT c.annotator_id FROM {_CLAIM} c WHERE c.item_id = %s AND c.expires_at > %s"
            " AND c.annotator_id <> %s UNION"
            f" SELECT a.annotator_id FROM {_ASSIGN} a WHERE a.item_id = %s AND a.annotator_id <> %s"
            f" AND {_HOLDING}) AS holders",
            [item_id, _ts(now), annotator_id, item_id, annotator_id, True])
        return cursor.fetchone()[0]


def last_review(*, annotator_id: int) -> Review | None:
    """The annotator's most recent review with its item attached (the undo button on every page)."""
    return (Review.objects.select_related("item").filter(annotator_id=annotator_id)
            .order_by("-created_at", "-id").first())


def item_with_claim(*, item_id: int, annotator_id: int) -> tuple[ReviewItem | None, Claim | None]:
    """The item and the annotator's claim on it (active or lapsed; None without one).
    Not for deciding under the item's lock: there, read the claim after taking it (claim_of)."""
    claim = Claim.objects.select_related("item").filter(item_id=item_id, annotator_id=annotator_id).first()
    if claim is not None:  # (the review page: one query)
        return claim.item, claim
    return ReviewItem.objects.filter(pk=item_id).first(), None


def item_by_id(item_id: int, lock: bool = False) -> ReviewItem | None:
    """The item; ``lock``: with its row lock (FOR UPDATE where the database has row locks; callers
    hold a transaction)."""
    qs = ReviewItem.objects.filter(pk=item_id)
    return (qs.select_for_update() if lock else qs).first()


def verdicts_of(*, item_id: int) -> set[str]:
    """The distinct verdicts submitted on the item."""
    return set(Review.objects.filter(item_id=item_id).order_by().values_list("verdict", flat=True).distinct())


def claim_of(*, item_id: int, annotator_id: int) -> Claim | None:
    """The annotator's claim on the item, active or lapsed ((item, annotator) is unique)."""
    return Claim.objects.filter(item_id=item_id, annotator_id=annotator_id).first()

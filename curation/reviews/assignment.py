"""Assigning review items to named annotators (issue #30 item 4), and releasing them.

Three ways to assign a set of open items (the explorer's selection or whole filter, or the API):

* named: every named annotator gets every item (refused when an item needs fewer reviews);
* even: each item gets as many distinct annotators from the list as it still has free places,
  the least loaded first, so the totals differ by at most one;
* percent: the same, but each annotator's share of all the places follows the given percentages
  (each item still gets distinct annotators, so with two places per item and two annotators
  both get every item, whatever the shares).

An assignment holds one of the item's review places (curation.reviews.queue counts it with the
active claims), so the item is never offered to anyone else beyond the places left. Everything
runs under the items' row locks, in id order, like every other change to an item's places.
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, has_role, user_roles
from curation.models import Assignment, AuditEvent, Claim, ItemState, Review, ReviewItem, Skip
from curation.models.assignments import holding_q
from projects.scoping import rows_to_write

MODES = {"named": "Each named annotator gets every item", "even": "Distribute evenly",
         "percent": "Distribute by percentage"}
MAX_ANNOTATORS = 50
_CHUNK = 2000  # ids per IN list (SQLite's bound on variables is far above; keeps statements small)


class AssignError(Exception):
    """An assignment or release that cannot run; the message is shown to the user."""


def _check_actor(actor) -> None:
    if not has_role(actor, ADJUDICATOR, ADMIN):
        raise AssignError("Assigning items needs the adjudicator or admin role.")


def _chunks(ids: Sequence[int]) -> Iterable[Sequence[int]]:
    for k in range(0, len(ids), _CHUNK):
        yield ids[k:k + _CHUNK]


def parse_names(text: str | Iterable[str]) -> list[str]:
    """Usernames from "alice, bob" (or a list), in order, without repeats."""
    parts = re.split(r"[\s,;]+", text) if isinstance(text, str) else [str(p) for p in text]
    return list(dict.fromkeys(p.strip()[:150] for p in parts if p and p.strip()))


def parse_shares(text: str) -> list[tuple[str, int]]:
    """[(username, percent)] from "alice 70, bob 30" (also "alice=70%" or "alice: 70")."""
    shares: list[tuple[str, int]] = []
    for part in re.split(r"[,;\n]+", text or ""):
        if not part.strip():
            continue
        m = re.fullmatch(r"\s*([\w.@+-]{1,150})\s*[:=]?\s*(\d{1,3})\s*%?\s*", part)
        if not m:
            raise AssignError(f"{part.strip()[:40]!r}: write a name and a percentage, e.g. \"alice 70, bob 30\".")
        shares.append((m.group(1), int(m.group(2))))
    return shares


def _annotators(names: Sequence[str]) -> list:
    if not names:
        raise AssignError("Name at least one annotator.")
    if len(names) > MAX_ANNOTATORS:
        raise AssignError(f"At most {MAX_ANNOTATORS} annotators at once.")
    if len(set(names)) != len(names):
        raise AssignError("Name each annotator once.")
    found = {u.username: u for u in get_user_model().objects.filter(username__in=names, is_active=True)}
    for name in names:
        if name not in found:
            raise AssignError(f"No user named {name!r}.")
        if ANNOTATOR not in user_roles(found[name]):
            raise AssignError(f"{name} is not an annotator.")
    return [found[n] for n in names]


def _locked_items(item_ids: Sequence[int], stage: str | None) -> list[ReviewItem]:
    if not item_ids:
        raise AssignError("Select at least one item.")
    ids = sorted(set(item_ids))
    items: list[ReviewItem] = []
    for chunk in _chunks(ids):
        qs = ReviewItem.objects.select_for_update().filter(pk__in=chunk)
        items += list(qs.filter(stage=stage) if stage else qs)
    if len(items) != len(ids):
        raise AssignError(f"{len(ids) - len(items)} of the selected items do not exist{' in this stage' if stage else ''}.")
    return sorted(items, key=lambda i: i.pk)


def _places(items: list[ReviewItem]) -> tuple[dict, dict, dict]:
    """Per item: who reviewed or skipped it, who holds a place (an active claim or a holding
    assignment), and the active assignments (id → username)."""
    now = timezone.now()
    done: dict[int, set[int]] = defaultdict(set)
    holders: dict[int, set[int]] = defaultdict(set)
    assigned: dict[int, dict[int, str]] = defaultdict(dict)
    ids = [i.pk for i in items]
    for chunk in _chunks(ids):
        for model in (Review, Skip):
            for item_id, user_id in model.objects.filter(item_id__in=chunk).values_list("item_id", "annotator_id"):
                done[item_id].add(user_id)
        for item_id, user_id in Claim.objects.filter(item_id__in=chunk, expires_at__gt=now).values_list(
                "item_id", "annotator_id"):
            holders[item_id].add(user_id)
        for item_id, user_id, name in Assignment.objects.filter(item_id__in=chunk, active=True).values_list(
                "item_id", "annotator_id", "annotator__username"):
            assigned[item_id][user_id] = name
            if user_id not in done[item_id]:  # reviewed or skipped: the assignment holds no place
                holders[item_id].add(user_id)
    return done, holders, assigned


def _names(items: list[ReviewItem], n: int = 3) -> str:
    shown = ", ".join(str(i) for i in items[:n])
    return shown + (f" and {len(items) - n} more" if len(items) > n else "")


def _plan_named(items, users, done, holders, assigned) -> dict[int, list]:
    plan: dict[int, list] = {}
    for item in items:
        needed = item.required_reviews - item.review_count
        if len(users) > needed:
            raise AssignError(f"{item} needs {needed} more review(s); {len(users)} annotators named.")
        for user in users:
            if user.pk in done[item.pk]:
                raise AssignError(f"{user.username} already reviewed or skipped {item}.")
        others = holders[item.pk] - {u.pk for u in users}
        if item.review_count + len(others) + len(users) > item.required_reviews:
            raise AssignError(f"{item}: only {needed - len(others)} place(s) left (other annotators hold it); "
                              "release them or name fewer annotators.")
        plan[item.pk] = [u for u in users if u.pk not in assigned[item.pk]]
    return plan


def _plan_shared(items, users, weights: list[int], done, holders) -> dict[int, list]:
    """Each item's free places to distinct annotators, each time to the one furthest below their
    share of the places given so far (ties: the earlier in the list)."""
    total_weight = sum(weights)
    share = {u.pk: w / total_weight for u, w in zip(users, weights)}
    order = {u.pk: k for k, u in enumerate(users)}
    given = {u.pk: 0 for u in users}
    total = 0
    plan: dict[int, list] = {}
    for item in items:
        free = item.required_reviews - item.review_count - len(holders[item.pk])
        eligible = [u for u in users if u.pk not in done[item.pk] and u.pk not in holders[item.pk]]
        chosen: list = []
        for _ in range(max(0, min(free, len(eligible)))):
            best = max((u for u in eligible if u not in chosen),
                       key=lambda u: (share[u.pk] * (total + 1) - given[u.pk], -order[u.pk]))
            chosen.append(best)
            given[best.pk] += 1
            total += 1
        plan[item.pk] = chosen
    return plan


@transaction.atomic
def assign(*, actor, item_ids: Sequence[int], mode: str, annotators: Sequence[str] = (),
           shares: Sequence[tuple[str, int]] = (), stage: str | None = None) -> dict:
    """Assign open items (all or nothing); returns {"items", "assignments", "per_annotator", "unchanged"}."""
    _check_actor(actor)
    if mode not in MODES:
        raise AssignError("Choose how to assign: named, even or percent.")
    if mode == "percent":
        if not shares:
            raise AssignError("Give each annotator a percentage, e.g. \"alice 70, bob 30\".")
        if any(not 1 <= p <= 100 for _, p in shares) or sum(p for _, p in shares) != 100:
            raise AssignError(f"The percentages must each be 1–100 and add up to 100 (they add up to "
                              f"{sum(p for _, p in shares)}).")
        names = [n for n, _ in shares]
    else:
        names = list(annotators)
    users = _annotators(names)
    items = _locked_items(item_ids, stage)
    closed = [i for i in items if i.state != ItemState.OPEN or i.excluded]
    if closed:
        raise AssignError(f"{len(closed)} item(s) are decided, awaiting adjudication or excluded ({_names(closed)}); "
                          "only open items can be assigned.")
    done, holders, assigned = _places(items)
    if mode == "named":
        plan = _plan_named(items, users, done, holders, assigned)
    else:
        weights = [p for _, p in shares] if mode == "percent" else [1] * len(users)
        plan = _plan_shared(items, users, weights, done, holders)
    now = timezone.now()
    by_pk = {i.pk: i for i in items}
    rows, events = [], []
    per_annotator = {u.username: 0 for u in users}
    for item_id, chosen in plan.items():
        if not chosen:
            continue
        for user in chosen:
            rows.append(Assignment(item_id=item_id, annotator=user, assigned_by=actor, created_at=now))
            per_annotator[user.username] += 1
        events.append(AuditEvent(actor=actor, action=AuditEvent.Action.ASSIGN, item=by_pk[item_id], at=now,
                                 before={"assigned": sorted(assigned[item_id].values())},
                                 after={"assigned": [u.username for u in chosen], "mode": mode}))
    Assignment.objects.bulk_create(rows, batch_size=1000)
    AuditEvent.objects.bulk_create(events, batch_size=1000)
    return {"items": len(events), "assignments": len(rows), "per_annotator": per_annotator,
            "unchanged": len(items) - len(events)}


@transaction.atomic
def release(*, actor, item_ids: Sequence[int], annotators: Sequence[str] = (), stage: str | None = None) -> dict:
    """End the active assignments on the items (of the named annotators only, when given); the
    places they held are open to the queue again. Returns {"items", "released"}."""
    _check_actor(actor)
    items = _locked_items(item_ids, stage)
    user_ids = None
    if annotators:
        found = dict(get_user_model().objects.filter(username__in=list(annotators)).values_list("username", "pk"))
        missing = [n for n in annotators if n not in found]
        if missing:
            raise AssignError(f"No user named {missing[0]!r}.")
        user_ids = list(found.values())
    now = timezone.now()
    released: dict[int, list[str]] = defaultdict(list)
    count = 0
    for chunk in _chunks([i.pk for i in items]):
        mine = {"item_id__in": chunk, "active": True}
        if user_ids is not None:
            mine["annotator_id__in"] = user_ids
        for item_id, name in Assignment.objects.filter(**mine).values_list("item_id", "annotator__username"):
            released[item_id].append(name)
        # The same rows: the items' locks keep any assignment on them from starting or ending
        # meanwhile; `active` is still tested in the UPDATE's own WHERE (rows_to_write).
        count += rows_to_write(Assignment).filter(**mine).update(active=False, released_at=now)
    AuditEvent.objects.bulk_create(
        [AuditEvent(actor=actor, action=AuditEvent.Action.RELEASE, item_id=item_id, at=now,
                    before={"assigned": sorted(names)}, after={"released": sorted(names)})
         for item_id, names in released.items()], batch_size=1000)
    return {"items": len(released), "released": count}


def release_beyond(item: ReviewItem, actor, now) -> int:
    """The reviews needed went down (explorer): release the latest holders beyond the new need,
    their claim and their assignment together. The item's lock is held. Returns how many."""
    latest: dict[int, object] = {}
    for user_id, at in Claim.objects.filter(item=item, expires_at__gt=now).values_list("annotator_id", "claimed_at"):
        latest[user_id] = max(at, latest.get(user_id, at))
    for user_id, at in Assignment.objects.filter(holding_q(), item=item).values_list("annotator_id", "created_at"):
        latest[user_id] = max(at, latest.get(user_id, at))
    excess = item.review_count + len(latest) - item.required_reviews
    if excess <= 0:
        return 0
    gone = sorted(latest, key=lambda u: (latest[u], u), reverse=True)[:excess]
    rows_to_write(Claim).filter(item_id=item.pk, annotator_id__in=gone).delete()
    names = list(Assignment.objects.filter(item=item, active=True, annotator_id__in=gone)
                 .values_list("annotator__username", flat=True))
    if names:
        rows_to_write(Assignment).filter(item_id=item.pk, active=True, annotator_id__in=gone).update(
            active=False, released_at=now)
        AuditEvent.objects.create(actor=actor, action=AuditEvent.Action.RELEASE, item=item, at=now,
                                  before={"assigned": sorted(names)},
                                  after={"released": sorted(names), "why": "fewer reviews needed"})
    return len(gone)


def assignees_of(item_ids: Sequence[int]) -> dict[int, list[str]]:
    """item id → the usernames its active assignments name (the explorer's column, one query)."""
    out: dict[int, list[str]] = defaultdict(list)
    for item_id, name in Assignment.objects.filter(item_id__in=list(item_ids), active=True).order_by(
            "item_id", "annotator__username").values_list("item_id", "annotator__username"):
        out[item_id].append(name)
    return out


def progress(*, annotator=None) -> dict[tuple[str, str], dict[str, int]]:
    """(username, stage) → {"assigned", "assigned_done"}: the active assignments whose item the
    annotator did not skip, and those they reviewed (their own work only). One query: per
    assignment, its review and skip are looked up by key (scalar subqueries, which no plan turns
    into a hash of the whole review table, as a WHERE EXISTS became on Postgres at 50,000 items)."""
    from django.db import connection

    a, u, i = Assignment._meta.db_table, get_user_model()._meta.db_table, ReviewItem._meta.db_table
    sql = (f"SELECT u.username, i.stage,"
           f" (SELECT COUNT(*) FROM {Review._meta.db_table} r WHERE r.item_id = a.item_id AND r.annotator_id = a.annotator_id),"
           f" (SELECT COUNT(*) FROM {Skip._meta.db_table} s WHERE s.item_id = a.item_id AND s.annotator_id = a.annotator_id)"
           f" FROM {a} a JOIN {u} u ON u.id = a.annotator_id JOIN {i} i ON i.id = a.item_id WHERE a.active = %s")
    params: list = [True]
    if annotator is not None:
        sql += " AND a.annotator_id = %s"
        params.append(annotator.pk)
    from projects.context import current_project_id

    if current_project_id() is not None:  # the current project's assignments only (issue #30)
        sql += " AND i.project_id = %s"
        params.append(current_project_id())
    out: dict[tuple[str, str], dict[str, int]] = {}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for name, stage, reviewed, skipped in cursor.fetchall():
            if skipped and not reviewed:
                continue
            row = out.setdefault((name, stage), {"assigned": 0, "assigned_done": 0})
            row["assigned"] += 1
            row["assigned_done"] += 1 if reviewed else 0
    return out

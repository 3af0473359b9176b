"""Assignment (issue #30 item 4): named, even and percentage distribution, the queue serving
assigned items first and nobody else beyond the places left, release, progress, audit, roles and
bad input. Pages and the API are in test_assignment_views.py; concurrency in
test_assignment_concurrency.py."""
from __future__ import annotations

from collections import Counter

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from almita_web.roles import ADJUDICATOR, ANNOTATOR, RESEARCHER
from curation.models import Assignment, AuditEvent, Claim, ItemState, ReviewItem, ReviewStage
from curation.reviews import assignment, queue, services
from curation.reviews.assignment import AssignError
from curation.reviews.explorer import items_bulk
from tests.conftest import make_user

pytestmark = pytest.mark.django_db
FG = ReviewStage.FLOWGRAPH


def _items(n: int, required: int = 2, start: int = 50_000) -> list[ReviewItem]:
    ReviewItem.objects.bulk_create([ReviewItem(stage=FG, object_id=start + k, required_reviews=required)
                                    for k in range(n)])
    return list(ReviewItem.objects.filter(stage=FG, object_id__gte=start, object_id__lt=start + n).order_by("pk"))


@pytest.fixture
def team(db):
    return {"boss": make_user("boss", ADJUDICATOR),
            **{name: make_user(name, ANNOTATOR) for name in ("alice", "bob", "carol")}}


def _active(item=None) -> Counter:
    qs = Assignment.objects.filter(active=True)
    if item is not None:
        qs = qs.filter(item=item)
    return Counter(qs.values_list("annotator__username", flat=True))


def _submit(user, item_id, verdict="accept"):
    return services.review_submit(annotator=user, item_id=item_id, verdict=verdict, reason_codes=[])


# --------------------------------------------------------------------------- distribution


def test_named_gives_every_item_to_every_named_annotator_and_audits_it(team):
    items = _items(3)
    result = assignment.assign(actor=team["boss"], item_ids=[i.pk for i in items], mode="named",
                               annotators=["alice", "bob"])
    assert result == {"items": 3, "assignments": 6, "per_annotator": {"alice": 3, "bob": 3}, "unchanged": 0}
    for item in items:
        assert _active(item) == {"alice": 1, "bob": 1}
    events = AuditEvent.objects.filter(action=AuditEvent.Action.ASSIGN)
    assert events.count() == 3 and all(e.actor == team["boss"] and e.after["assigned"] == ["alice", "bob"]
                                       for e in events)
    # Again: nothing new, nothing duplicated.
    again = assignment.assign(actor=team["boss"], item_ids=[i.pk for i in items], mode="named", annotators=["alice"])
    assert again["assignments"] == 0 and again["unchanged"] == 3 and Assignment.objects.count() == 6


def test_even_distribution_gives_each_item_its_free_places_balanced(team):
    items = _items(9, required=1)
    result = assignment.assign(actor=team["boss"], item_ids=[i.pk for i in items], mode="even",
                               annotators=["alice", "bob", "carol"])
    assert result["per_annotator"] == {"alice": 3, "bob": 3, "carol": 3}
    items2 = _items(5, required=2, start=60_000)
    result = assignment.assign(actor=team["boss"], item_ids=[i.pk for i in items2], mode="even",
                               annotators=["alice", "bob", "carol"])
    assert result["assignments"] == 10 and sorted(result["per_annotator"].values()) == [3, 3, 4]


def test_percentage_follows_the_shares(team):
    items = _items(20, required=1)
    result = assignment.assign(actor=team["boss"], item_ids=[i.pk for i in items], mode="percent",
                               shares=[("alice", 70), ("bob", 30)])
    assert result["per_annotator"] == {"alice": 14, "bob": 6}
    assert assignment.parse_shares("alice 70, bob=30%") == [("alice", 70), ("bob", 30)]


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(needs=st.lists(st.integers(1, 3), min_size=1, max_size=12), reviewed=st.lists(st.integers(0, 11), max_size=4),
       weights=st.lists(st.integers(1, 60), min_size=1, max_size=3), mode=st.sampled_from(["even", "percent"]))
def test_distribution_properties(team, needs, reviewed, weights, mode):
    """Whatever the items' needs and earlier reviews: each item gets min(free places, eligible
    annotators) distinct annotators, none who reviewed it, and no item gets more holders than it needs."""
    Assignment.objects.all().delete()
    Claim.objects.all().delete()
    ReviewItem.objects.all().delete()
    items = []
    for k, need in enumerate(needs):
        items += _items(1, required=need, start=70_000 + k)
    names = ["alice", "bob", "carol"][:len(weights)]
    for k in sorted(set(reviewed)):  # carol reviewed some items first
        if k < len(items):
            services._claim_upsert(items[k], team["carol"], timezone.now())
            _submit(team["carol"], items[k].pk)
    shares = ()
    if mode == "percent":
        total = sum(weights)
        pcts = [w * 100 // total for w in weights]
        pcts[0] += 100 - sum(pcts)
        shares = list(zip(names, pcts, strict=True))
        if any(p < 1 for p in pcts):
            return
    open_items = [i.pk for i in ReviewItem.objects.filter(state=ItemState.OPEN)]
    if not open_items:
        return
    result = assignment.assign(actor=team["boss"], item_ids=open_items, mode=mode, annotators=names, shares=shares)
    assert result["assignments"] == Assignment.objects.count() == sum(result["per_annotator"].values())
    for item in ReviewItem.objects.filter(pk__in=open_items):
        got = list(Assignment.objects.filter(item=item).values_list("annotator__username", flat=True))
        assert len(got) == len(set(got))  # distinct annotators
        reviewers = set(item.reviews.values_list("annotator__username", flat=True))
        assert not reviewers & set(got)
        eligible = [n for n in names if n not in reviewers]
        assert len(got) == min(item.required_reviews - item.review_count, len(eligible))
        assert item.review_count + len(got) <= item.required_reviews
    if mode == "even":
        counts = [result["per_annotator"][n] for n in names]
        assert max(counts) - min(counts) <= max(needs)


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("kwargs, message", [
    ({"mode": "named", "annotators": ["alice", "bob", "carol"]}, "needs 2 more review(s); 3 annotators named"),
    ({"mode": "named", "annotators": ["boss"]}, "boss is not an annotator"),
    ({"mode": "named", "annotators": ["nobody"]}, "No user named 'nobody'"),
    ({"mode": "named", "annotators": []}, "Name at least one annotator"),
    ({"mode": "named", "annotators": ["alice", "alice"]}, "Name each annotator once"),
    ({"mode": "percent", "shares": [("alice", 70), ("bob", 20)]}, "add up to 100 (they add up to 90)"),
    ({"mode": "percent", "shares": []}, "Give each annotator a percentage"),
    ({"mode": "sideways", "annotators": ["alice"]}, "Choose how to assign"),
])
def test_bad_requests_are_refused_with_a_short_reason(team, kwargs, message):
    items = _items(2)
    with pytest.raises(AssignError, match=message.replace("(", r"\(").replace(")", r"\)")):
        assignment.assign(actor=team["boss"], item_ids=[i.pk for i in items], **kwargs)
    assert not Assignment.objects.exists() and not AuditEvent.objects.filter(action="assign").exists()


def test_reviewed_decided_and_excluded_items_are_refused(team):
    a, b, c = _items(3, required=1)
    services._claim_upsert(a, team["alice"], timezone.now())
    _submit(team["alice"], a.pk)  # decided
    with pytest.raises(AssignError, match="1 item\\(s\\) are decided, awaiting adjudication or excluded"):
        assignment.assign(actor=team["boss"], item_ids=[a.pk, b.pk], mode="even", annotators=["bob"])
    items_bulk(actor=team["boss"], stage=FG, item_ids=[c.pk], action="exclude")
    with pytest.raises(AssignError, match="only open items"):
        assignment.assign(actor=team["boss"], item_ids=[c.pk], mode="named", annotators=["bob"])
    d, = _items(1, required=2, start=51_000)
    services._claim_upsert(d, team["alice"], timezone.now())
    _submit(team["alice"], d.pk)
    with pytest.raises(AssignError, match="alice already reviewed or skipped"):
        assignment.assign(actor=team["boss"], item_ids=[d.pk], mode="named", annotators=["alice"])
    assert not Assignment.objects.exists()


def test_named_is_refused_when_other_annotators_hold_the_places(team):
    item, = _items(1, required=2)
    services._claim_upsert(item, team["carol"], timezone.now())
    with pytest.raises(AssignError, match="only 1 place\\(s\\) left"):
        assignment.assign(actor=team["boss"], item_ids=[item.pk], mode="named", annotators=["alice", "bob"])
    # carol herself may be assigned the place she holds, with one more.
    assignment.assign(actor=team["boss"], item_ids=[item.pk], mode="named", annotators=["carol", "alice"])
    assert _active(item) == {"carol": 1, "alice": 1}


@pytest.mark.parametrize("role", [ANNOTATOR, RESEARCHER])
def test_annotators_and_researchers_may_not_assign_or_release(team, role):
    item, = _items(1)
    user = make_user(f"x_{role}", role)
    with pytest.raises(AssignError, match="adjudicator or admin"):
        assignment.assign(actor=user, item_ids=[item.pk], mode="named", annotators=["alice"])
    with pytest.raises(AssignError, match="adjudicator or admin"):
        assignment.release(actor=user, item_ids=[item.pk])


# --------------------------------------------------------------------------- the queue


def test_assigned_items_come_first_and_are_offered_to_nobody_else(team):
    items = _items(4, required=1)
    last = items[-1]
    assignment.assign(actor=team["boss"], item_ids=[last.pk], mode="named", annotators=["alice"])
    now = timezone.now()
    # bob never sees it, in the list, the count or claim-next; alice gets it first.
    assert last.pk not in [i.pk for i in queue.candidates(stage=FG, annotator_id=team["bob"].pk, now=now)]
    assert queue.count_candidates(stage=FG, annotator_id=team["bob"].pk, now=now) == 3
    assert queue.count_candidates(stage=FG, annotator_id=team["alice"].pk, now=now) == 4
    taken = [services.review_claim_next(annotator=team["bob"], stage=FG) for _ in range(1)]
    assert taken[0].pk != last.pk
    assert services.review_claim_next(annotator=team["alice"], stage=FG).pk == last.pk
    assert [i.pk for i in services.assigned_items(annotator=team["alice"])] == [last.pk]
    # Submitting ends the assignment (done); alice's next item is an ordinary one.
    _submit(team["alice"], last.pk)
    assert assignment.progress(annotator=team["alice"]) == {("alice", FG): {"assigned": 1, "assigned_done": 1}}
    assert services.assigned_items(annotator=team["alice"]) == []


def test_an_expired_claim_keeps_the_assigned_place_and_release_frees_it(team):
    item, = _items(1, required=1)
    assignment.assign(actor=team["boss"], item_ids=[item.pk], mode="named", annotators=["alice"])
    assert services.review_claim_next(annotator=team["alice"], stage=FG).pk == item.pk
    Claim.objects.update(claimed_at=timezone.now() - timezone.timedelta(hours=3),
                         expires_at=timezone.now() - timezone.timedelta(hours=2))
    assert services.review_claim_next(annotator=team["bob"], stage=FG) is None
    result = assignment.release(actor=team["boss"], item_ids=[item.pk])
    assert result == {"items": 1, "released": 1}
    assert AuditEvent.objects.get(action=AuditEvent.Action.RELEASE).after == {"released": ["alice"]}
    assert services.review_claim_next(annotator=team["bob"], stage=FG).pk == item.pk
    # alice's late submit is refused: her claim lapsed and bob took the place.
    with pytest.raises(services.CurationError, match="expired"):
        _submit(team["alice"], item.pk)


def test_undo_gives_the_place_back_and_skip_frees_it(team):
    a, b = _items(2, required=2)
    assignment.assign(actor=team["boss"], item_ids=[a.pk, b.pk], mode="named", annotators=["alice"])
    assert services.review_claim_next(annotator=team["alice"], stage=FG).pk == a.pk
    _submit(team["alice"], a.pk)
    assert [i.pk for i in services.assigned_items(annotator=team["alice"])] == [b.pk]  # a waits for others
    services.review_undo(annotator=team["alice"])
    assert [i.pk for i in services.assigned_items(annotator=team["alice"])] == [a.pk, b.pk]
    assert assignment.progress(annotator=team["alice"])[("alice", FG)] == {"assigned": 2, "assigned_done": 0}
    services.review_skip(annotator=team["alice"], item_id=a.pk, reason="unsure")
    assert assignment.progress(annotator=team["alice"])[("alice", FG)] == {"assigned": 1, "assigned_done": 0}
    # a: skipped, its place free for two others; b: one place left for others.
    now = timezone.now()
    assert queue.active_claims_of_others(item_id=a.pk, annotator_id=team["bob"].pk, now=now) == 0
    assert queue.active_claims_of_others(item_id=b.pk, annotator_id=team["bob"].pk, now=now) == 1


def test_fewer_reviews_needed_releases_assignments_beyond_the_need(team):
    item, = _items(1, required=3)
    assignment.assign(actor=team["boss"], item_ids=[item.pk], mode="named", annotators=["alice", "bob", "carol"])
    items_bulk(actor=team["boss"], stage=FG, item_ids=[item.pk], action="required", required=2)
    assert sum(_active(item).values()) == 2
    assert AuditEvent.objects.filter(action=AuditEvent.Action.RELEASE, item=item).count() == 1


def test_release_of_named_annotators_only(team):
    items = _items(2)
    assignment.assign(actor=team["boss"], item_ids=[i.pk for i in items], mode="named", annotators=["alice", "bob"])
    assert assignment.release(actor=team["boss"], item_ids=[i.pk for i in items], annotators=["bob"]) == {
        "items": 2, "released": 2}
    assert _active() == {"alice": 2}
    with pytest.raises(AssignError, match="No user named"):
        assignment.release(actor=team["boss"], item_ids=[items[0].pk], annotators=["zed"])
    with pytest.raises(AssignError, match="Select at least one item"):
        assignment.release(actor=team["boss"], item_ids=[])


def test_the_assigned_items_query_starts_from_the_annotators_assignments_on_sqlite(team):
    """claim-next's first question reads the annotator's few assignments by index, never the
    stage's open items (Postgres plans by its statistics: bench/scale.py times it there)."""
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("the query plan is checked on SQLite")
    _items(50)
    query = queue.candidates(stage=FG, annotator_id=team["alice"].pk, now=timezone.now(), limit=1,
                             assigned_only=True).query
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + query.sql, query.params)
        plan = " | ".join(str(row[-1]) for row in cursor.fetchall())
    assert "assignment_annotator_active" in plan and "SCAN i" not in plan, plan

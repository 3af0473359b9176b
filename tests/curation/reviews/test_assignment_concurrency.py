"""Four annotators claim and submit at once over assigned and unassigned items, on whichever
database is configured (issue #30 item 4): an assigned item goes only to its assignees, each of
them gets their assigned items before anything else, and no item ever has more holders (active
claims and holding assignments, each annotator once) than the places it has left."""
from __future__ import annotations

from collections import defaultdict

import pytest
from django.utils import timezone

from almita_web.roles import ADJUDICATOR, ANNOTATOR
from curation.models import Assignment, Review, ReviewItem, ReviewStage
from curation.models.assignments import holding_q
from curation.reviews import assignment, services
from tests.conftest import make_user
from tests.curation.reviews.watched import run_watched

FG = ReviewStage.FLOWGRAPH


def overfull_items() -> list[int]:
    """One statement (one snapshot: the rows are read while the annotators write)."""
    from django.db import connection

    sql = ("SELECT i.id FROM curation_reviewitem i WHERE i.review_count"
           " + (SELECT COUNT(*) FROM curation_claim c WHERE c.item_id = i.id AND c.expires_at > %s)"
           " + (SELECT COUNT(*) FROM curation_assignment a WHERE a.item_id = i.id AND a.active = %s"
           "    AND NOT EXISTS (SELECT 1 FROM curation_review r WHERE r.item_id = i.id AND r.annotator_id = a.annotator_id)"
           "    AND NOT EXISTS (SELECT 1 FROM curation_skip s WHERE s.item_id = i.id AND s.annotator_id = a.annotator_id)"
           "    AND NOT EXISTS (SELECT 1 FROM curation_claim c2 WHERE c2.item_id = i.id"
           "                    AND c2.annotator_id = a.annotator_id AND c2.expires_at > %s))"
           " > i.required_reviews")
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(sql, [now, True, now])
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_parallel_claims_with_assignments():
    boss = make_user("par_boss", ADJUDICATOR)
    users = {n: make_user(n, ANNOTATOR) for n in ("alice", "bob", "carol", "dave")}
    ReviewItem.objects.bulk_create(
        [ReviewItem(stage=FG, object_id=90_000 + k, required_reviews=1 if 10 <= k < 20 else 2) for k in range(40)])
    items = list(ReviewItem.objects.order_by("pk"))
    group_a, group_b = [i.pk for i in items[:10]], [i.pk for i in items[10:20]]
    assignment.assign(actor=boss, item_ids=group_a, mode="named", annotators=["alice", "bob"])
    assignment.assign(actor=boss, item_ids=group_b, mode="even", annotators=["carol"])
    taken: dict[str, list[int]] = {n: [] for n in users}
    errors: list[str] = []

    def annotate(name: str) -> None:
        user = users[name]
        try:
            while (item := services.review_claim_next(annotator=user, stage=FG)) is not None:
                taken[name].append(item.pk)
                services.review_submit(annotator=user, item_id=item.pk, verdict="accept", reason_codes=[])
        except Exception as exc:  # noqa: BLE001 - reported below with the thread's user
            errors.append(f"{name}: {exc!r}")

    overfull = run_watched([lambda n=n: annotate(n) for n in users], overfull_items)

    assert not errors, errors
    assert not overfull, f"items with more holders than places: {overfull[:3]}"
    reviewers: dict[int, set[str]] = defaultdict(set)
    for item_id, name in Review.objects.values_list("item_id", "annotator__username"):
        reviewers[item_id].add(name)
    assert all(reviewers[pk] == {"alice", "bob"} for pk in group_a)
    assert all(reviewers[pk] == {"carol"} for pk in group_b)
    # Each assignee took their assigned items before anything else.
    assert set(taken["alice"][:10]) == set(taken["bob"][:10]) == set(group_a)
    assert set(taken["carol"][:10]) == set(group_b)
    assert Review.objects.count() == 10 * 2 + 10 + 20 * 2
    assert not Assignment.objects.filter(holding_q()).exists()

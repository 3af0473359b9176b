"""8 annotators claim and submit in parallel over 500 items, on whichever database is configured.

Invariants: no item is ever held by more annotators than it still needs (checked continuously by
a monitor thread and afterwards from the audit log), no verdict is lost or duplicated.
"""
from __future__ import annotations

import random
from collections import Counter

import pytest
from django.db import connection
from django.db.models import Count, F, Q
from django.utils import timezone

from almita_web.roles import ANNOTATOR
from curation.models import AuditEvent, Claim, ItemState, Review, ReviewItem, ReviewStage
from curation.reviews import services
from tests.conftest import make_user
from tests.curation.reviews.watched import run_watched

ITEMS = 500
ANNOTATORS = 8


def overclaimed_items() -> list[int]:
    now = timezone.now()
    return list(
        ReviewItem.objects.annotate(active=Count("claims", filter=Q(claims__expires_at__gt=now)))
        .filter(active__gt=F("required_reviews") - F("review_count")).values_list("pk", flat=True)
    )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_parallel_claims_and_verdicts():
    users = [make_user(f"par{i}", ANNOTATOR) for i in range(ANNOTATORS)]
    ReviewItem.objects.bulk_create(
        [ReviewItem(stage=ReviewStage.FLOWGRAPH, object_id=10_000 + i, required_reviews=2,
                    has_warnings=(i % 7 == 0)) for i in range(ITEMS)]
    )
    submitted: dict[int, list[tuple[int, str]]] = {u.pk: [] for u in users}
    errors: list[str] = []

    def annotate(user) -> None:
        rng = random.Random(user.pk)
        try:
            while True:
                item = services.review_claim_next(annotator=user, stage=ReviewStage.FLOWGRAPH)
                if item is None:
                    break
                verdict = "accept" if rng.random() < 0.8 else "reject"
                services.review_submit(annotator=user, item_id=item.pk, verdict=verdict,
                                       reason_codes=["FG-ROOT"] if verdict == "reject" else [])
                submitted[user.pk].append((item.pk, verdict))
        except Exception as exc:  # noqa: BLE001 - reported below with the thread's user
            errors.append(f"{user.username}: {exc!r}")

    overclaims = run_watched([lambda u=u: annotate(u) for u in users], overclaimed_items)

    assert not errors, errors
    assert not overclaims, f"over-claimed items seen: {overclaims[:3]}"
    # Every verdict a thread saw succeed is in the database exactly once, and nothing else is.
    expected = Counter((item_id, uid, v) for uid, rows in submitted.items() for item_id, v in rows)
    actual = Counter(Review.objects.values_list("item_id", "annotator_id", "verdict"))
    assert actual == expected
    assert sum(expected.values()) == ITEMS * 2
    per_item = Counter(Review.objects.values_list("item_id", flat=True))
    assert set(per_item.values()) == {2} and len(per_item) == ITEMS
    assert not ReviewItem.objects.exclude(review_count=2).exists()
    assert not ReviewItem.objects.filter(state=ItemState.OPEN).exists()
    # Every claim was used for exactly one verdict: nobody was handed an item that was full.
    assert AuditEvent.objects.filter(action=AuditEvent.Action.CLAIM).count() == ITEMS * 2
    assert not Claim.objects.exists()
    assert connection.vendor in ("sqlite", "postgresql")

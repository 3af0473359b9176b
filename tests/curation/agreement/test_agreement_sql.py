"""The agreement figures aggregated in SQL equal the row-by-row computation; the verdict CSV is guarded."""
from __future__ import annotations

import csv
import io
import random
from collections import defaultdict
from itertools import combinations

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from almita_web.roles import ADJUDICATOR, RESEARCHER, assign_roles
from curation.agreement.measures import cohen_kappa, krippendorff_alpha_nominal, percent_agreement
from curation.agreement.stats import VERDICT_FIELDS, agreement_by_stage, agreement_for_stage, verdict_rows
from curation.models import Flag, GoldItem, ItemState, Review, ReviewItem, ReviewStage

pytestmark = pytest.mark.django_db
COMPLETE = (ItemState.DISAGREEMENT, ItemState.DECIDED)


def reference(stage: str) -> dict:
    """The former Python computation over every review row (kept here as the oracle)."""
    # Excluded items (a rejected ancestor) are out of curation: not agreement data (issue #31).
    rows = list(Review.objects.filter(item__stage=stage, item__state__in=COMPLETE, item__gold__isnull=True,
                                      item__excluded=False)
                .order_by("item_id", "id").values_list("item_id", "annotator_id", "verdict"))
    by_item = defaultdict(list)
    for item_id, annotator_id, verdict in rows:
        by_item[item_id].append((annotator_id, verdict))
    units = [[v for _, v in reviews] for reviews in by_item.values()]
    all_pairs = [(a[1], b[1]) for reviews in by_item.values() for a, b in combinations(reviews, 2)]
    first_second = [(r[0][1], r[1][1]) for r in by_item.values() if len(r) >= 2]
    overall = {"percent": percent_agreement(all_pairs).as_dict(), "kappa": cohen_kappa(first_second).as_dict(),
               "alpha": krippendorff_alpha_nominal(units).as_dict()}
    names = dict(User.objects.values_list("pk", "username"))
    pair_items = defaultdict(list)
    for reviews in by_item.values():
        for (a, va), (b, vb) in combinations(sorted(reviews, key=lambda r: names[r[0]]), 2):
            pair_items[(a, b)].append((va, vb))
    pairs = [{"a": names[a], "b": names[b], "n": len(p), "disagreements": sum(va != vb for va, vb in p), "percent": percent_agreement(p).as_dict(),
              "kappa": cohen_kappa(p).as_dict(), "alpha": krippendorff_alpha_nominal([list(x) for x in p]).as_dict()}
             for (a, b), p in sorted(pair_items.items(), key=lambda kv: (names[kv[0][0]], names[kv[0][1]]))]
    excluded = ReviewItem.objects.filter(stage=stage, state__in=COMPLETE, gold__isnull=True, excluded=True).count()
    return {"items": len(by_item), "reviews": len(rows), "overall": overall, "pairs": pairs, "excluded": excluded}


def close(a, b) -> bool:
    """Equal, floats to 1e-9 (the SQL path sums the same terms in another order)."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and abs(a - b) < 1e-9
    return a == b


def populate(seed: int, n_items: int = 60) -> list[User]:
    rng = random.Random(seed)
    users = [User.objects.create_user(f"{name}{seed}") for name in ("zed", "amy", "bob", "kim")]
    now = timezone.now()
    for k in range(n_items):
        required = 3 if k == 0 else rng.choice([2, 2, 2, 3])  # always one item with three reviews
        state = ItemState.DECIDED if k == 0 else rng.choice([ItemState.OPEN, ItemState.DISAGREEMENT, ItemState.DECIDED])
        decided = state == ItemState.DECIDED
        n_reviews = required if state != ItemState.OPEN else rng.randint(0, required - 1)
        item = ReviewItem.objects.create(
            stage=rng.choice(ReviewStage.values), object_id=seed * 10_000 + k, required_reviews=required,
            state=state, decision="accept" if decided else "", decided_at=now if decided else None,
            review_count=n_reviews, excluded=rng.random() < 0.15)
        for user in rng.sample(users, n_reviews):
            Review.objects.create(item=item, annotator=user, verdict=rng.choice(["accept", "accept", "reject"]))
        if rng.random() < 0.08:
            GoldItem.objects.create(item=item, expected="accept")
    return users


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_sql_agreement_equals_the_row_by_row_computation(seed):
    populate(seed)
    every = agreement_by_stage()
    for stage in ReviewStage.values:
        want = reference(stage)
        for got in (every[stage], agreement_for_stage(stage)):
            assert {k: got[k] for k in want} == want or close({k: got[k] for k in want}, want), stage


def agreement_queries():
    with CaptureQueriesContext(connection) as ctx:
        agreement_by_stage()
    return [q for q in ctx.captured_queries if "auth_user" not in q["sql"]]


def test_only_doubly_reviewed_items_take_one_query():
    populate(8, 30)
    ReviewItem.objects.filter(review_count=3).delete()
    assert len(agreement_queries()) == 1
    for stage in ReviewStage.values:
        assert close({k: v for k, v in agreement_for_stage(stage).items() if k in reference(stage)}, reference(stage))


def test_agreement_page_takes_the_same_queries_for_ten_or_a_hundred_items(client):
    boss = User.objects.create_user("boss", password="pw")
    assign_roles(boss, [ADJUDICATOR, RESEARCHER])
    client.force_login(boss)
    client.get(reverse("curation:agreement"))  # the session's first request reads more
    counts = []
    for seed, n in ((5, 10), (6, 100)):
        populate(seed, n)
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(reverse("curation:agreement")).status_code == 200
        counts.append(len(ctx))
    assert counts[0] == counts[1]


def test_verdict_csv_guards_every_text_cell_and_matches_the_rows(client):
    populate(7, 40)
    boss = User.objects.create_user("boss", password="pw")
    assign_roles(boss, [ADJUDICATOR, RESEARCHER])
    risky = User.objects.create_user("-sneaky")  # usernames may start with - + @
    item = ReviewItem.objects.create(stage="conversation", object_id=99, state=ItemState.DISAGREEMENT,
                                     review_count=1, required_reviews=1)
    review = Review.objects.create(item=item, annotator=risky, verdict="reject", comment='=HYPERLINK("http://evil/")',
                                   reason_codes=["OTHER"])
    Flag.objects.create(review=review, kind="turn", target="0", reason="OTHER", comment="\t=1+1")
    client.force_login(boss)
    resp = client.get(reverse("curation:agreement_csv"))
    rows = list(csv.reader(io.StringIO(b"".join(resp.streaming_content).decode())))
    assert tuple(rows[0]) == VERDICT_FIELDS
    mine = [r for r in rows[1:] if r[0] == str(item.pk)]
    assert mine == [[str(item.pk), "conversation", "99", "'-sneaky", "reject", "OTHER", "'=HYPERLINK(\"http://evil/\")",
                     review.created_at.isoformat(), "disagreement", "", "turn 0: OTHER (\t=1+1)"]]
    assert not any(c[:1] in "=+-@\t\r" and c for r in rows[1:] for c in r)
    stamps = Review.objects.filter(item__state__in=COMPLETE, item__gold__isnull=True).order_by("item_id", "id")
    assert [r[7] for r in rows[1:]] == [at.isoformat() for at in stamps.values_list("created_at", flat=True)]
    plain = [r for r in rows[1:] if r[0] != str(item.pk)]
    want = [[str(v) for v in row.values()] for row in verdict_rows() if row["item_id"] != item.pk]
    assert plain == want

"""Query counts of the review path (claim-next, review page, submit, skip), pinned.

These are the product's most frequent requests (bench/review.py, bench/review_http.py): a query
more on any of them costs every verdict. The limits are the counts measured on Postgres and
SQLite (the larger of the two: Postgres adds FOR UPDATE row locks, SQLite has none and needs
none), with the session already in the cache and the flowgraph's SVG already drawn.
"""
from __future__ import annotations

import pytest
from django.urls import reverse

from curation.models import Claim, Review, ReviewStage
from curation.reviews import services
from curation.reviews.lineage import reset_sync_throttle
from tests.conftest import PASSWORD
from tests.curation.factories import build_lineage

CLAIM_RESUME = 2  # user, held item (the session comes from the cache)
# user, held item, then in a transaction: (SQLite: held item again,) the annotator's assigned items
# (issue #30), gold share, candidate, others' claims, claim upsert, audit (+ 2 savepoint statements
# in the test's transaction)
CLAIM_NEW = 11
# user, the item with the user's claim on it, the last review with its item, the artifact with its
# procedure and intent (one outer join, curation.reviews.artifacts), APIs
PAGE = 5
SUBMIT = 21  # user, item; lock, claim, review, claim delete, item, audit, meta (+2 savepoints); CLAIM_NEW - 1
SKIP = 20


@pytest.fixture
def annotator_client(client, personas):
    for i in range(3):
        build_lineage(conversations=1, seed=i)
    services.items_sync()
    client.login(username=personas["annotator"].username, password=PASSWORD)
    client.get(reverse("curation:queue"))  # roles into the session
    return client, personas["annotator"]


def _claim(client) -> str:
    resp = client.post(reverse("curation:claim_next", args=[ReviewStage.FLOWGRAPH]))
    assert resp.status_code == 302 and "/curation/items/" in resp["Location"], resp
    return resp["Location"]


def test_claim_page_submit_query_counts(annotator_client, django_assert_max_num_queries, drawing_queue):
    client, user = annotator_client
    reset_sync_throttle()
    client.post(reverse("curation:claim_next", args=[ReviewStage.FLOWGRAPH]))  # items_sync ran: warm
    Claim.objects.filter(annotator=user).delete()
    with django_assert_max_num_queries(CLAIM_NEW):
        url = _claim(client)
    with django_assert_max_num_queries(CLAIM_RESUME):
        assert _claim(client) == url
    assert b"Drawing\xe2\x80\xa6" in client.get(url).content  # not drawn yet: queued for the worker
    drawing_queue.run()  # the worker draws and stores the SVG
    with django_assert_max_num_queries(PAGE):
        page = client.get(url)
    assert page.status_code == 200 and b"<svg" in page.content
    with django_assert_max_num_queries(SUBMIT):
        resp = client.post(url + "submit/", {"verdict": "accept", "comment": "", "flags": "[]"})
    assert resp.status_code == 302 and resp["Location"] != url
    assert Review.objects.filter(annotator=user).count() == 1
    assert Claim.objects.filter(annotator=user).count() == 1  # the next item, claimed by the submit
    following = resp["Location"]
    client.get(following)
    drawing_queue.run()
    assert b"<svg" in client.get(following).content
    with django_assert_max_num_queries(PAGE):  # with a verdict to undo shown, as in steady use
        assert b"undo-form" in client.get(following).content
    with django_assert_max_num_queries(SKIP):
        resp = client.post(following + "skip/", {"reason": "unsure"})
    assert resp.status_code == 302


def test_submit_without_flags_reads_no_graph(annotator_client, django_assert_max_num_queries):
    """Flags are checked against the item's graph only when the verdict carries some."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client, _ = annotator_client
    url = _claim(client)
    with CaptureQueriesContext(connection) as ctx:
        client.post(url + "submit/", {"verdict": "accept", "comment": "", "flags": "[]"})
    assert not [q for q in ctx.captured_queries if "generation_flowgraph" in q["sql"]]


@pytest.mark.django_db
def test_claim_candidates_are_read_in_queue_index_order_on_sqlite(personas):
    """The candidate query walks reviewitem_queue_order instead of sorting the stage's open items
    (with ``NOT i.excluded`` SQLite could not match the index's third column and sorted them all)."""
    from django.db import connection
    from django.utils import timezone

    from curation.reviews.queue import candidates

    if connection.vendor != "sqlite":
        pytest.skip("the query plan is checked on SQLite; Postgres plans by its statistics")
    query = candidates(stage=ReviewStage.CONVERSATION, annotator_id=personas["annotator"].pk,
                       now=timezone.now(), limit=1).query
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + query.sql, query.params)
        plan = " | ".join(str(row[-1]) for row in cursor.fetchall())
    assert "reviewitem_queue_order" in plan and "TEMP B-TREE FOR ORDER BY" not in plan, plan


def _statement_sent(call) -> tuple[str, list]:
    """(SQL, params) of the last statement `call()` sends, as written (not as a prepared EXECUTE)."""
    from django.db import connection

    seen = []

    def record(run, sql, params, many, ctx):
        seen.append((sql, params))
        return run(sql, params, many, ctx)

    with connection.execute_wrapper(record):
        call()
    return seen[-1]


def _pages_read(plan_json) -> int:
    """Shared buffers a Postgres EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) plan touched."""
    import json

    root = (plan_json if isinstance(plan_json, list) else json.loads(plan_json))[0]["Plan"]
    return root["Shared Hit Blocks"] + root.get("Shared Read Blocks", 0)


@pytest.mark.parametrize("plan", ["force_generic_plan", "force_custom_plan"])
def test_the_held_item_lookup_reads_the_annotators_own_claims_only(personas, plan):
    """Claims churn (every verdict deletes one) and dead index entries stay until vacuum: the
    lookup of an annotator's held item, on every claim-next and submit, must not read every
    annotator's entries with their rows. With the indexes of migration 0006 ((item, expires_at),
    item, annotator) it read 300-330 pages here, in both plans; with 0007's, 4-40."""
    import json

    from django.contrib.auth.models import User
    from django.db import connection
    from django.utils import timezone

    from curation.reviews import queue

    if connection.vendor != "postgresql":
        pytest.skip("page counts come from Postgres' EXPLAIN (BUFFERS)")
    for i in range(4):
        build_lineage(conversations=2, seed=i)
    services.items_sync()
    others = [User.objects.create_user(f"churn{i}").pk for i in range(8)]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE curation_claim, curation_reviewitem")  # statistics as autovacuum keeps them
        for _ in range(12):  # ~3,000 claims made and let go by other annotators
            cursor.execute("INSERT INTO curation_claim (item_id, annotator_id, claimed_at, expires_at)"
                           " SELECT i.id, u, now(), now() + interval '1 hour' FROM curation_reviewitem i,"
                           " unnest(%s::int[]) AS u", [others])
            cursor.execute("DELETE FROM curation_claim")
        assert Claim.objects.count() == 0
        item = services.review_claim_next(annotator=personas["annotator"], stage=ReviewStage.FLOWGRAPH)
        held = []
        sql, _params = _statement_sent(lambda: held.append(queue.held_item(
            stage=ReviewStage.FLOWGRAPH, annotator_id=personas["annotator"].pk, now=timezone.now())))
        assert held[0].pk == item.pk
        parts = sql.split("%s")
        assert len(parts) == 5, parts
        cursor.execute(f"SET LOCAL plan_cache_mode = {plan}")
        cursor.execute("PREPARE held_probe(int, timestamptz, text, text) AS "
                       + "".join(p + (f"${i}" if i < 5 else "") for i, p in enumerate(parts, start=1)))
        try:
            args = [personas["annotator"].pk, timezone.now(), ReviewStage.FLOWGRAPH, "open"]
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE held_probe(%s, %s, %s, %s)", args)
            plan_json = cursor.fetchone()[0]
            cursor.execute("EXECUTE held_probe(%s, %s, %s, %s)", args)
            assert cursor.fetchone()[0] == item.pk  # the statement finds the held item
        finally:
            cursor.execute("DEALLOCATE held_probe")
    assert _pages_read(plan_json) < 60, json.dumps(plan_json)[:2000]


def test_the_last_review_is_read_from_the_end_of_an_index_not_sorted(personas):
    """Every review page shows the annotator's latest review (undo). It must come from the end of
    review_annotator_recent whatever the annotator's number of reviews, not from a sort of them all."""
    import json
    from datetime import timedelta

    from django.db import connection
    from django.utils import timezone

    from curation.models import ReviewItem
    from curation.reviews import queue

    me = personas["annotator"]
    start = timezone.now() - timedelta(days=30)
    items = ReviewItem.objects.bulk_create(ReviewItem(stage=ReviewStage.FLOWGRAPH, object_id=10_000 + i)
                                           for i in range(3000))
    Review.objects.bulk_create(Review(item=item, annotator=me, verdict="accept",
                                      created_at=start + timedelta(minutes=i)) for i, item in enumerate(items))
    latest = queue.last_review(annotator_id=me.pk)
    assert latest.item_id == items[-1].pk and latest.item.pk == items[-1].pk
    sql, params = _statement_sent(lambda: queue.last_review(annotator_id=me.pk))
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            plan = " | ".join(str(row[-1]) for row in cursor.fetchall())
            assert "review_annotator_recent" in plan and "TEMP B-TREE" not in plan, plan
            return
        cursor.execute("ANALYZE curation_review, curation_reviewitem")
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params)
        plan_json = cursor.fetchone()[0]
    # All of the annotator's 3,000 reviews would be 30+ pages; the last entry is a handful.
    assert _pages_read(plan_json) < 15, json.dumps(plan_json)[:2000]

"""Query counts of the review path (claim-next, review page, submit, skip), pinned.

These are the product's most frequent requests (bench/review.py, bench/review_http.py): a query
more on any of them costs every verdict. The limits are the counts measured on Postgres and
SQLite (the larger of the two: Postgres adds FOR UPDATE row locks, SQLite has none and needs
none), with the session already in the cache and the flowgraph's SVG already drawn.
"""
from __future__ import annotations

import pytest
from django.urls import reverse

from curation import services
from curation.lineage import reset_sync_throttle
from curation.models import Claim, Review, ReviewStage
from tests.conftest import PASSWORD
from tests.curation.factories import build_lineage

CLAIM_RESUME = 2  # user, held item (the session comes from the cache)
# user, held item, then in a transaction: (SQLite: held item again,) gold share, candidate, others'
# claims, claim upsert, audit (+ 2 savepoint statements in the test's transaction)
CLAIM_NEW = 10
# user, the item with the user's claim on it, the last review with its item, the artifact with its
# procedure and intent (one outer join, curation.artifact_rows), APIs
PAGE = 5
SUBMIT = 20  # user, item; lock, claim, review, claim delete, item, audit, meta (+2 savepoints); CLAIM_NEW - 1
SKIP = 19


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


def test_claim_page_submit_query_counts(annotator_client, django_assert_max_num_queries):
    client, user = annotator_client
    reset_sync_throttle()
    client.post(reverse("curation:claim_next", args=[ReviewStage.FLOWGRAPH]))  # items_sync ran: warm
    Claim.objects.filter(annotator=user).delete()
    with django_assert_max_num_queries(CLAIM_NEW):
        url = _claim(client)
    with django_assert_max_num_queries(CLAIM_RESUME):
        assert _claim(client) == url
    assert b"<svg" in client.get(url).content  # draws and stores the SVG
    with django_assert_max_num_queries(PAGE):
        page = client.get(url)
    assert page.status_code == 200 and b"<svg" in page.content
    with django_assert_max_num_queries(SUBMIT):
        resp = client.post(url + "submit/", {"verdict": "accept", "comment": "", "flags": "[]"})
    assert resp.status_code == 302 and resp["Location"] != url
    assert Review.objects.filter(annotator=user).count() == 1
    assert Claim.objects.filter(annotator=user).count() == 1  # the next item, claimed by the submit
    following = resp["Location"]
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


@pytest.mark.django_db(transaction=True)  # the other request writes from its own connection
def test_first_view_waits_for_the_drawing_another_request_is_making(monkeypatch):
    """Two annotators open a new item at once and the graph needs the dot program (too big for
    the library, or no library): the program runs for one of them only."""
    import threading

    from django.core.cache import cache
    from django.db import connections

    from curation import present

    monkeypatch.setattr(present, "_in_process", lambda data: False)
    fg = build_lineage(conversations=1).flowgraph
    fg.svg = ""
    drawn = present._render(fg.data)[0]
    assert cache.add(present._drawing_key(fg), 1, timeout=30)  # another request is drawing it

    def no_render(*args, **kwargs):
        raise AssertionError("drew it twice")

    monkeypatch.setattr(present, "_render", no_render)
    type(fg).objects.filter(pk=fg.pk).update(svg="")
    def other_request_stores_it():
        type(fg).objects.filter(pk=fg.pk).update(svg=drawn)
        connections.close_all()

    timer = threading.Timer(0.05, other_request_stores_it)
    timer.start()
    try:
        out = present.cached_svg(fg)
    finally:
        timer.join()
    assert out["error"] == "" and "data-nodes=" in out["svg"]


@pytest.mark.django_db
def test_a_small_graph_is_drawn_at_once_without_agreeing_on_a_drawer(monkeypatch):
    """Drawn in the process (a fraction of a millisecond), the first view neither waits for nor
    announces a concurrent drawing; the drawing is stored on the row for the next viewer."""
    from django.core.cache import cache

    from curation import present
    from generation.pipeline import graphviz_lib

    if not graphviz_lib.available():
        pytest.skip("Graphviz's library is not installed")
    fg = build_lineage(conversations=1).flowgraph
    type(fg).objects.filter(pk=fg.pk).update(svg="")
    fg.svg = ""
    assert cache.add(present._drawing_key(fg), 1, timeout=30)  # a concurrent viewer: not waited for
    monkeypatch.setattr(present, "_drawn_by_another", lambda row: pytest.fail("waited for another drawer"))
    out = present.cached_svg(fg)
    assert out["error"] == "" and "data-nodes=" in out["svg"]
    fg.refresh_from_db()
    assert "data-nodes=" in fg.svg


@pytest.mark.django_db
def test_claim_candidates_are_read_in_queue_index_order_on_sqlite(personas):
    """The candidate query walks reviewitem_queue_order instead of sorting the stage's open items
    (with ``NOT i.excluded`` SQLite could not match the index's third column and sorted them all)."""
    from django.db import connection
    from django.utils import timezone

    from curation.queue import candidates

    if connection.vendor != "sqlite":
        pytest.skip("the query plan is checked on SQLite; Postgres plans by its statistics")
    query = candidates(stage=ReviewStage.CONVERSATION, annotator_id=personas["annotator"].pk,
                       now=timezone.now(), limit=1).query
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + query.sql, query.params)
        plan = " | ".join(str(row[-1]) for row in cursor.fetchall())
    assert "reviewitem_queue_order" in plan and "TEMP B-TREE FOR ORDER BY" not in plan, plan

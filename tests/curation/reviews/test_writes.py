"""curation.reviews.writes writes the same rows the ORM would, on SQLite and Postgres."""
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db.models import signals
from django.utils import timezone

from curation.models import AuditEvent, Claim, Review, ReviewItem, ReviewMeta, ReviewStage
from curation.reviews import writes

pytestmark = pytest.mark.django_db


@pytest.fixture
def item_and_user():
    user = get_user_model().objects.create_user("hs", password="pw-123456789")
    item = ReviewItem.objects.create(stage=ReviewStage.FLOWGRAPH, object_id=991)
    return item, user


def test_insert_update_delete_write_what_the_orm_reads_back(item_and_user):
    item, user = item_and_user
    now = timezone.now()
    data = {"state": "open", "nested": {"ü": [1, 2.5, None, True]}, "text": "quote \" and 'x'"}
    pk = writes.insert(AuditEvent, actor=user.pk, action="verdict", item=item.pk, before=data, after={}, at=now)
    ev = AuditEvent.objects.get(pk=pk)
    assert (ev.actor_id, ev.action, ev.item_id, ev.before, ev.after, ev.at) == (user.pk, "verdict", item.pk, data, {}, now)
    orm = AuditEvent.objects.create(actor=user, action="verdict", item=item, before=data, after={}, at=now)
    # The same JSON round trip as an ORM-written row, filterable the same way.
    assert AuditEvent.objects.filter(before__nested__ü=[1, 2.5, None, True]).count() == 2
    assert orm.pk != pk

    rid = writes.insert(Review, item=item.pk, annotator=user.pk, verdict="reject", reason_codes=["A", "B"],
                         comment="", created_at=now, updated_at=now)
    review = Review.objects.get(pk=rid)
    assert review.reason_codes == ["A", "B"] and review.created_at == now
    writes.insert(ReviewMeta, review=rid, seconds=None, guideline_version=3)
    assert ReviewMeta.objects.get(review_id=rid).seconds is None

    assert writes.update(ReviewItem, item.pk, review_count=1, excluded=True) == 1
    item.refresh_from_db()
    assert (item.review_count, item.excluded) == (1, True)
    assert ReviewItem.objects.filter(excluded=True).count() == 1  # stored as the ORM stores booleans
    assert writes.update(ReviewItem, item.pk + 999, review_count=1) == 0


def test_upsert_claim_inserts_then_renews_the_same_row(item_and_user):
    item, user = item_and_user
    t0 = timezone.now()
    writes.upsert_claim(Claim, item_id=item.pk, annotator_id=user.pk, claimed_at=t0, expires_at=t0 + timedelta(minutes=1))
    first = Claim.objects.get()
    t1 = t0 + timedelta(hours=1)
    writes.upsert_claim(Claim, item_id=item.pk, annotator_id=user.pk, claimed_at=t1, expires_at=t1 + timedelta(minutes=30))
    again = Claim.objects.get()
    assert again.pk == first.pk and again.claimed_at == t1 and again.expires_at == t1 + timedelta(minutes=30)
    assert Claim.objects.filter(expires_at__gt=t1).count() == 1
    assert writes.delete(Claim, item=item.pk, annotator=user.pk) == 1
    assert not Claim.objects.exists()


def test_nothing_listens_to_the_signals_these_writes_skip():
    for model in (AuditEvent, Review, ReviewMeta, Claim, ReviewItem):
        for signal in (signals.pre_save, signals.post_save, signals.pre_delete, signals.post_delete):
            assert not signal.has_listeners(model), (model.__name__, signal)


def test_blocked_above_matches_the_ancestor_definition_for_every_stage_and_decision():
    """lineage.blocked_above (one plain query) agrees with lineage.ancestors (the ORM walk)."""
    from itertools import product

    from curation.models import ItemState, Verdict
    from curation.reviews.lineage import ancestors, blocked_above, items_sync
    from generation.models import Conversation
    from tests.curation.factories import build_lineage

    build_lineage(conversations=3)  # so that ids of different tables differ in the lineage under test
    lin = build_lineage(conversations=1, seed=1)
    direct = Conversation.objects.create(procedure=lin.procedure, messages=[{"role": "user", "content": "hi"}])
    items_sync()
    targets = [(ReviewStage.PROCEDURE, lin.procedure.pk), (ReviewStage.FLOWGRAPH, lin.flowgraph.pk),
               (ReviewStage.CONVERSATION_GRAPH, lin.conversation_graph.pk), (ReviewStage.CONVERSATION, lin.conversations[0].pk),
               (ReviewStage.CONVERSATION, direct.pk)]
    items = {t: ReviewItem.objects.get(stage=t[0], object_id=t[1]) for t in targets}
    ups = [ReviewStage.PROCEDURE, ReviewStage.FLOWGRAPH, ReviewStage.CONVERSATION_GRAPH]
    for decisions in product([None, Verdict.ACCEPT, Verdict.REJECT], repeat=3):
        for stage, decision in zip(ups, decisions):
            item = next(i for (s, _o), i in items.items() if s == stage)
            state = ItemState.OPEN if decision is None else ItemState.DECIDED
            ReviewItem.objects.filter(pk=item.pk).update(state=state, decision=decision or "",
                                                         decided_at=timezone.now() if decision else None)
        rejected = {(i.stage, i.object_id) for i in ReviewItem.objects.filter(state=ItemState.DECIDED,
                                                                               decision=Verdict.REJECT)}
        for stage, oid in targets:
            want = any(a in rejected for a in ancestors(stage, oid))
            assert blocked_above(stage, oid) == want, (decisions, stage, oid)
    assert blocked_above(ReviewStage.FLOWGRAPH, 10**9) is False  # no such artifact


def test_a_conclusions_lineage_statements_run_prepared_on_postgres_and_long_lists_as_text():
    """Each conclusion runs the cascade's statements for one artifact: prepared on Postgres (they
    were planned afresh, 0.2-0.6 ms apiece); a cascade through many children stays plain text."""
    from django.db import connection

    from curation.reviews.lineage import cascade_apply, items_sync
    from generation.models import ConversationGraph, Flowgraph
    from tests.curation.factories import build_lineage

    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are Postgres'")
    lin = build_lineage(conversations=1, seed=1)
    for i in range(5):  # five more conversation graphs under the flowgraph: a 6-id cascade below it
        ConversationGraph.objects.create(flowgraph=lin.flowgraph, data=lin.flowgraph.data, key=f"cg-extra-{i}")
    items_sync()
    item = ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH, object_id=lin.flowgraph.pk)
    ReviewItem.objects.filter(pk=item.pk).update(state="decided", decision="reject", decided_at=timezone.now())
    item.refresh_from_db()
    summary = cascade_apply(item)
    assert Flowgraph.objects.get(pk=lin.flowgraph.pk).status == "rejected"
    assert summary["conversationgraph:excluded"] == 6, summary
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE name LIKE 'almita_%%'")
        texts = [row[0] for row in cursor.fetchall()]
    assert any("UPDATE generation_flowgraph SET status = $1 WHERE id IN ($2)" in t for t in texts), texts
    assert any("SELECT object_id, decision, withheld FROM curation_reviewitem" in t for t in texts), texts
    assert any("EXISTS (SELECT 1 FROM curation_reviewitem r" in t for t in texts), texts
    assert not any("IN ($1, $2, $3, $4, $5, $6)" in t or "IN ($2, $3, $4, $5, $6, $7)" in t for t in texts), texts

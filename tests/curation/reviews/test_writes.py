"""The review path's claim upsert and the lineage cascade's rules, on SQLite and Postgres."""
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from curation.models import Claim, ReviewItem, ReviewStage

pytestmark = pytest.mark.django_db


@pytest.fixture
def item_and_user():
    user = get_user_model().objects.create_user("hs", password="pw-123456789")
    item = ReviewItem.objects.create(stage=ReviewStage.FLOWGRAPH, object_id=991)
    return item, user


def test_a_claim_upsert_inserts_then_renews_the_same_row(item_and_user):
    from curation.reviews.claims import _claim_upsert

    item, user = item_and_user
    t0 = timezone.now()
    _claim_upsert(item, user, t0)
    first = Claim.objects.get()
    t1 = t0 + timedelta(hours=1)
    _claim_upsert(item, user, t1)
    again = Claim.objects.get()
    assert again.pk == first.pk and again.claimed_at == t1 and again.expires_at > t1
    assert Claim.objects.filter(expires_at__gt=t1).count() == 1


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


def test_a_rejection_cascades_through_many_children():
    """A rejected flowgraph excludes every conversation graph under it (a 6-id cascade)."""
    from curation.reviews.lineage import cascade_apply, items_sync
    from generation.models import ConversationGraph, Flowgraph
    from tests.curation.factories import build_lineage

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

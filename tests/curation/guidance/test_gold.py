"""Gold items: marking, seeding known-bad copies, accuracy, and keeping gold out of releases and agreement."""
from __future__ import annotations

import random

import pytest
from django.urls import reverse
from django.utils import timezone

from curation.agreement import services as agreement
from curation.guidance import flags as flag_services
from curation.guidance import gold
from curation.models import GoldItem, GoldOrigin, ItemState, ReviewItem, ReviewStage, Verdict
from curation.releases import services as releases
from curation.reviews import claims
from curation.reviews import services
from generation.models import Conversation, Flowgraph
from generation.pipeline.formats import graph_from_json
from tests.conftest import PASSWORD
from tests.curation.factories import build_lineage

pytestmark = pytest.mark.django_db


def _decide(item, verdict, *users):
    for user in users:
        assert services.review_claim_next(annotator=user, stage=item.stage).pk == item.pk
        flag_services.review_submit_flagged(annotator=user, item_id=item.pk, verdict=verdict,
                                            reason_codes=[] if verdict == "accept" else ["OTHER"],
                                            comment="" if verdict == "accept" else "bad")
    item.refresh_from_db()
    return item


def test_graph_mutations_break_what_they_say():
    lin_data = {"kind": "flowgraph", "nodes": [{"id": f"N{i}", "type": t, "label": "x"} for i, t in enumerate(
        ["start_message", "message", "end_message", "end_message"])],
        "edges": [{"id": "E0", "source": "N0", "target": "N1"}, {"id": "E1", "source": "N1", "target": "N2"},
                  {"id": "E2", "source": "N1", "target": "N3"}]}
    dropped, what = gold.mutate_graph(lin_data, "dropped edge", random.Random(0))
    assert len(dropped["edges"]) == 2 and what.startswith("dropped edge")
    broken, what = gold.mutate_graph(lin_data, "broken rule", random.Random(0))
    g = graph_from_json(broken)
    assert what.startswith("broken rule") and any(v == "N0" for _, v in g.edges)


def test_conversation_mutations():
    msgs = [{"role": "user", "content": "my id is B1"}, {"role": "api", "content": "get_order(order_id='B1')"},
            {"role": "api_output", "content": "{}"}, {"role": "assistant", "content": "ok"}]
    swapped, what = gold.mutate_conversation(msgs, ["get_order", "refund_order"], "swapped API", random.Random(0))
    assert swapped[1]["content"].startswith("refund_order(") and "swapped API" in what
    unsaid, what = gold.mutate_conversation(msgs, ["get_order"], "unsaid value", random.Random(0))
    assert "B1" not in unsaid[1]["content"] and unsaid[1]["content"].startswith("get_order(order_id='")
    assert msgs[1]["content"] == "get_order(order_id='B1')"  # the source is untouched
    with pytest.raises(gold.GoldError):
        gold.mutate_conversation([{"role": "user", "content": "hi"}], [], "swapped API", random.Random(0))


def test_seeding_at_a_rate_and_accuracy_with_an_interval(annotator_a, annotator_b, admin_user):
    lins = [build_lineage(conversations=1, seed=i) for i in range(4)]
    services.items_sync()
    accepted = ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH, object_id=lins[0].flowgraph.pk)
    _decide(accepted, "accept", annotator_a, annotator_b)
    assert accepted.state == ItemState.DECIDED
    open_real = ReviewItem.objects.filter(stage=ReviewStage.FLOWGRAPH, state=ItemState.OPEN).count()
    assert open_real == 3
    made = gold.gold_seed(actor=admin_user, stage=ReviewStage.FLOWGRAPH, rate=0.25, seed=1)
    assert len(made) == 1  # ceil(0.25 * 3 / 0.75) = 1
    seeded = made[0]
    assert seeded.origin == GoldOrigin.SEEDED and seeded.expected == Verdict.REJECT and seeded.source == accepted
    copy = Flowgraph.objects.get(pk=seeded.item.object_id)
    assert copy.procedure_id == lins[0].procedure.pk and copy.data != lins[0].flowgraph.data
    assert copy.key == "" and copy.status == "pending" and copy.job_id is None
    assert gold.gold_seed(actor=admin_user, stage=ReviewStage.FLOWGRAPH, rate=0.25) == []  # rate reached
    # a catches the fault, b misses it (each holds a claim on the seeded item, as the queue gives).
    for user, verdict in ((annotator_a, "reject"), (annotator_b, "accept")):
        services._claim_upsert(seeded.item, user, timezone.now())
        flag_services.review_submit_flagged(annotator=user, item_id=seeded.item_id, verdict=verdict,
                                            reason_codes=["FG-UNFAITHFUL"] if verdict == "reject" else [])
    acc = {a["annotator"]: a for a in gold.gold_accuracy()}
    assert acc["annotator_a"]["correct"] == 1 and acc["annotator_b"]["correct"] == 0
    lo, hi = acc["annotator_a"]["low"], acc["annotator_a"]["high"]
    assert 0 < lo < 1 and hi == 1.0
    assert gold.wilson(0, 0) == (0.0, 1.0)
    lo, hi = gold.wilson(8, 10)
    assert round(lo, 3) == 0.490 and round(hi, 3) == 0.943  # the textbook Wilson interval for 8/10


def test_gold_never_reaches_a_release_or_the_agreement(annotator_a, annotator_b, admin_user):
    lin = build_lineage(conversations=2)
    services.items_sync()
    convs = [ReviewItem.objects.get(stage=ReviewStage.CONVERSATION, object_id=c.pk) for c in lin.conversations]
    for item in convs:
        _decide(item, "accept", annotator_a, annotator_b)
    assert releases.tests_for("curated", {}).count() == len(lin.tests)
    figures = agreement.agreement_for_stage(ReviewStage.CONVERSATION)
    assert figures["items"] == 2
    gold.gold_mark(actor=admin_user, item_ids=[convs[0].pk], expected=Verdict.ACCEPT)
    kept = set(releases.tests_for("curated", {}).values_list("conversation_id", flat=True))
    assert kept == {lin.conversations[1].pk}
    assert set(releases.tests_for("automatic", {}).values_list("conversation_id", flat=True)) == kept
    assert agreement.agreement_for_stage(ReviewStage.CONVERSATION)["items"] == 1
    assert {r["item_id"] for r in agreement.verdict_rows()} == {convs[1].pk}
    # A gold flowgraph keeps every test below it out too.
    fg = ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH)
    gold.gold_mark(actor=admin_user, item_ids=[fg.pk], expected=Verdict.ACCEPT)
    assert releases.tests_for("automatic", {}).count() == 0


def test_gold_page_roles_and_bad_input(client, annotator_a, admin_user, adjudicator):
    build_lineage(conversations=1)
    services.items_sync()
    url = reverse("curation:gold")
    assert client.get(url).status_code == 302
    client.login(username=adjudicator.username, password=PASSWORD)
    assert client.get(url).status_code == 403
    assert client.post(reverse("curation:gold_mark"), {"items": "1", "expected": "accept"}).status_code == 403
    client.login(username=admin_user.username, password=PASSWORD)
    assert client.get(url).status_code == 200
    assert client.get(reverse("curation:gold_mark")).status_code == 405
    resp = client.post(reverse("curation:gold_mark"), {"items": "1, x9", "expected": "accept"}, follow=True)
    assert "whole numbers" in resp.content.decode()
    resp = client.post(reverse("curation:gold_mark"), {"items": "999999", "expected": "accept"}, follow=True)
    assert "No review item with id 999999" in resp.content.decode()
    item = ReviewItem.objects.get(stage=ReviewStage.CONVERSATION)
    client.post(reverse("curation:gold_mark"), {"items": str(item.pk), "expected": "reject"})
    assert GoldItem.objects.get(item=item).expected == "reject"
    resp = client.post(reverse("curation:gold_seed"), {"stage": "conversation", "rate": "60", "limit": "5"}, follow=True)
    assert resp.status_code == 200 and Conversation.objects.count() == 1


def test_seeded_copies_are_mixed_into_the_queue_not_left_at_its_end(annotator_a, annotator_b, admin_user,
                                                                    monkeypatch):
    """Copies are new rows (last in id order); claim-next draws them at their share of the open queue."""
    lins = [build_lineage(conversations=1, seed=i) for i in range(8)]
    services.items_sync()
    for lin in lins[:2]:
        _decide(ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH, object_id=lin.flowgraph.pk), "accept",
                annotator_a, annotator_b)
    made = gold.gold_seed(actor=admin_user, stage=ReviewStage.FLOWGRAPH, rate=0.25, seed=1)
    assert len(made) == 2  # ceil(0.25 * 6 / 0.75) = 2, one copy of each accepted item
    gold_ids = {g.item_id for g in made}
    assert min(gold_ids) > max(ReviewItem.objects.exclude(pk__in=gold_ids).values_list("pk", flat=True))
    monkeypatch.setattr(claims, "_rng", random.Random(3))
    order = []
    for _ in range(8):
        item = services.review_claim_next(annotator=annotator_a, stage=ReviewStage.FLOWGRAPH)
        order.append(item.pk in gold_ids)
        services.review_submit(annotator=annotator_a, item_id=item.pk, verdict="accept", reason_codes=[])
    assert sum(order) == 2 and order != [False] * 6 + [True] * 2  # not both at the end
    assert queue_share_is_zero_when_no_gold()


def queue_share_is_zero_when_no_gold() -> bool:
    from curation.reviews import queue
    GoldItem.objects.all().delete()
    return queue.gold_share(stage=ReviewStage.FLOWGRAPH) == 0.0


def test_gold_share_counts_the_stages_open_gold_items_only():
    """The share claim-next draws gold at: open, not excluded gold items of the stage over its open items."""
    from curation.reviews import queue
    for i in range(6):
        build_lineage(conversations=1, seed=i)
    services.items_sync()
    flows = list(ReviewItem.objects.filter(stage=ReviewStage.FLOWGRAPH).order_by("pk"))
    assert queue.gold_share(stage=ReviewStage.FLOWGRAPH) == 0.0
    for item in flows[:4]:
        GoldItem.objects.create(item=item, expected="accept")
    GoldItem.objects.create(item=ReviewItem.objects.filter(stage=ReviewStage.CONVERSATION_GRAPH).first(),
                            expected="accept")  # another stage: not counted
    assert queue.gold_share(stage=ReviewStage.FLOWGRAPH) == 4 / 6
    ReviewItem.objects.filter(pk=flows[0].pk).update(state=ItemState.DECIDED, decision=Verdict.ACCEPT,
                                                     decided_at=timezone.now())  # decided: neither counted
    ReviewItem.objects.filter(pk=flows[1].pk).update(excluded=True)  # excluded: neither counted
    ReviewItem.objects.filter(pk=flows[5].pk).update(excluded=True)  # a plain excluded item: not in the base
    assert queue.gold_share(stage=ReviewStage.FLOWGRAPH) == 2 / 3

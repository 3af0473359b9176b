"""The data explorer: filters in the URL, blindness for annotators, bulk actions and their roles."""
from __future__ import annotations

import pytest
from django.urls import reverse

from curation.guidance import flags as flag_services
from curation.models import AuditEvent, ItemState, ReviewItem, ReviewStage
from curation.reviews import explorer, services
from generation.models import GenerationJob
from tests.conftest import PASSWORD
from tests.curation.factories import build_lineage

pytestmark = pytest.mark.django_db


def _review(user, item, verdict, codes=(), flags=None):
    assert services.review_claim_next(annotator=user, stage=item.stage).pk == item.pk
    return flag_services.review_submit_flagged(annotator=user, item_id=item.pk, verdict=verdict,
                                               reason_codes=list(codes), flags=flags)


@pytest.fixture
def world(annotator_a, annotator_b):
    job = GenerationJob.objects.create(name="gpt run", config={"models": {"flowgraph": "model-x"}})
    lin1 = build_lineage(conversations=1)
    lin2 = build_lineage(conversations=1, seed=1)
    lin2.flowgraph.job = job
    lin2.flowgraph.text = lin2.flowgraph.text.replace("Hello", "Bonjour")
    lin2.flowgraph.save()
    services.items_sync()
    fg1 = ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH, object_id=lin1.flowgraph.pk)
    fg2 = ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH, object_id=lin2.flowgraph.pk)
    _review(annotator_a, fg1, "reject", flags=[{"kind": "node", "target": "N2", "reason": "FG-WRONG-BRANCH"}])
    _review(annotator_b, fg1, "accept")
    return {"job": job, "fg1": fg1, "fg2": fg2}


def _ids(client, stage="flowgraph", **params):
    resp = client.get(reverse("curation:explore", args=[stage]), params)
    assert resp.status_code == 200
    return [r["item"].pk for r in resp.context["rows"]]


def test_filters_come_from_the_url(client, world, adjudicator):
    client.login(username=adjudicator.username, password=PASSWORD)
    fg1, fg2 = world["fg1"].pk, world["fg2"].pk
    assert _ids(client) == [fg1, fg2]
    assert _ids(client, sort="-id") == [fg2, fg1]
    assert _ids(client, job=world["job"].pk) == [fg2]
    assert _ids(client, model="model-x") == [fg2]
    assert _ids(client, q="Bonjour") == [fg2]
    assert _ids(client, q=str(fg2)) == [fg2]
    assert _ids(client, state="disagreement") == [fg1]
    assert _ids(client, state="open") == [fg2]
    assert _ids(client, reason="FG-WRONG-BRANCH") == [fg1]  # from the flag's reason
    assert _ids(client, annotator="annotator_b") == [fg1]
    assert _ids(client, split="yes", pair="annotator_a,annotator_b") == [fg1]
    assert _ids(client, warnings="yes") == []
    # Bad values are named, never a 500.
    resp = client.get(reverse("curation:explore", args=["flowgraph"]), {"job": "x" * 50, "page": "99999999999"})
    assert resp.status_code == 200
    assert any("job" in str(m) for m in resp.context["messages"])


def test_pagination_keeps_the_filters(client, adjudicator, monkeypatch):
    monkeypatch.setattr(explorer, "PAGE_SIZE", 1)
    build_lineage(conversations=1)
    build_lineage(conversations=1)
    services.items_sync()
    client.login(username=adjudicator.username, password=PASSWORD)
    page = client.get(reverse("curation:explore", args=["flowgraph"]), {"sort": "-id"}).content.decode()
    assert 'href="?sort=-id&amp;page=2"' in page


def test_annotators_see_only_their_own_verdicts(client, world, annotator_a):
    client.login(username=annotator_a.username, password=PASSWORD)
    resp = client.get(reverse("curation:explore", args=["flowgraph"]))
    page = resp.content.decode()
    assert [r["item"].pk for r in resp.context["rows"]] == [world["fg1"].pk]
    assert "annotator_b" not in page and "Awaiting adjudication" not in page and 'id="bulk-actions"' not in page
    # Their review opens read-only.
    review = client.get(reverse("curation:review", args=[world["fg1"].pk])).content.decode()
    assert 'id="own-verdict"' in review and 'id="review-form"' not in review
    assert 'id="own-flags"' in review and '<script id="flag-marks" type="application/json">{"node": {"N2": "a"}' in review
    # Filtering by someone else's name does not reveal their items.
    assert _ids(client, annotator="annotator_b") == [world["fg1"].pk]


def test_bulk_actions_by_role(client, world, annotator_a, adjudicator, outsider):
    url = reverse("curation:explore_bulk", args=["flowgraph"])
    fg1, fg2 = world["fg1"], world["fg2"]
    client.login(username=annotator_a.username, password=PASSWORD)
    assert client.post(url, {"action": "exclude", "items": [fg2.pk]}).status_code == 403
    client.logout()
    assert client.post(url, {"action": "exclude", "items": [fg2.pk]}).status_code == 302  # to login
    assert client.get(url).status_code in (302, 405)
    client.login(username=adjudicator.username, password=PASSWORD)
    assert client.get(url).status_code == 405
    client.post(url, {"action": "exclude", "items": [fg2.pk]})
    fg2.refresh_from_db()
    assert fg2.excluded
    client.post(url, {"action": "include", "items": [fg2.pk]})
    client.post(url, {"action": "required", "required": "3", "items": [fg2.pk]})
    fg2.refresh_from_db()
    assert not fg2.excluded and fg2.required_reviews == 3
    client.post(url, {"action": "requeue", "items": [fg1.pk, fg2.pk]})
    fg1.refresh_from_db()
    assert fg1.state == ItemState.OPEN and fg1.required_reviews == 3 and fg1.review_count == 2
    assert AuditEvent.objects.filter(item=fg1, after__bulk="requeue").exists()
    resp = client.post(url, {"action": "required", "required": "99", "items": [fg2.pk]}, follow=True)
    assert "between 1 and 10" in resp.content.decode()


def test_conversation_text_and_noise_filters(client, adjudicator):
    lin = build_lineage(conversations=2)
    first, second = lin.conversations
    first.messages = first.messages + [{"role": "user", "content": "Zebra crossing, ünïcode"}]
    first.save()
    second.noise_kinds = ["off_topic"]
    second.save()
    services.items_sync()
    items = {c.pk: ReviewItem.objects.get(stage=ReviewStage.CONVERSATION, object_id=c.pk).pk for c in (first, second)}
    client.login(username=adjudicator.username, password=PASSWORD)
    assert _ids(client, "conversation", q="zebra CROSSING") == [items[first.pk]]
    assert _ids(client, "conversation", noise="off_topic") == [items[second.pk]]
    assert _ids(client, "conversation", noise="off") == []


def test_state_filters_read_the_effective_state(client, world, adjudicator):
    """An item in disagreement whose ancestor is rejected is excluded, never 'awaiting adjudication'."""
    client.login(username=adjudicator.username, password=PASSWORD)
    fg1 = world["fg1"]
    ReviewItem.objects.filter(pk=fg1.pk).update(excluded=True)  # as a cascade from its procedure leaves it
    assert ReviewItem.objects.get(pk=fg1.pk).state == ItemState.DISAGREEMENT
    assert _ids(client, state="disagreement") == []
    assert _ids(client, state="excluded") == [fg1.pk]


def test_include_again_under_a_rejected_ancestor_is_refused_with_the_reason(adjudicator, annotator_a, annotator_b):
    """Issue #31: it made an excluded conversation Accepted, counted, and a gold seeding source."""
    from generation.models import Conversation, CurationStatus

    lin = build_lineage(conversations=1, seed=3)
    services.items_sync()
    conv = ReviewItem.objects.get(stage=ReviewStage.CONVERSATION, object_id=lin.conversations[0].pk)
    fg = ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH, object_id=lin.flowgraph.pk)
    for user in (annotator_a, annotator_b):
        _review(user, conv, "accept")
    for user in (annotator_a, annotator_b):
        _review(user, fg, "reject", ["FG-ROOT"])
    conv.refresh_from_db()
    assert conv.excluded and conv.decision == "accept"
    result = explorer.items_bulk(actor=adjudicator, stage=ReviewStage.CONVERSATION, item_ids=[conv.pk], action="include")
    assert result["done"] == 0 and result["refused"] == [
        f"{conv}: Ancestor rejected: Flowgraph #{lin.flowgraph.pk}; include that one again first."]
    conv.refresh_from_db()
    assert conv.excluded and Conversation.objects.get(pk=conv.object_id).status == CurationStatus.EXCLUDED
    # Withheld by hand, then included again: back where it was, with what lies below it.
    fg2 = ReviewItem.objects.filter(stage=ReviewStage.PROCEDURE).first()
    explorer.items_bulk(actor=adjudicator, stage=ReviewStage.PROCEDURE, item_ids=[fg2.pk], action="exclude")
    assert ReviewItem.objects.filter(excluded=False).count() == 0
    explorer.items_bulk(actor=adjudicator, stage=ReviewStage.PROCEDURE, item_ids=[fg2.pk], action="include")
    assert set(ReviewItem.objects.filter(excluded=True).values_list("pk", flat=True)) == {conv.pk} | set(
        ReviewItem.objects.filter(stage=ReviewStage.CONVERSATION_GRAPH).values_list("pk", flat=True))


def test_fewer_reviews_needed_releases_the_claims_beyond_the_need(db, adjudicator, annotator_a, annotator_b):
    """Found by the stateful test on PostgreSQL: lowering the need to 1 while two annotators held the
    item left two annotators on an item that needed one."""
    from curation.models import Claim
    from tests.curation.invariants import check_all

    build_lineage(conversations=1)
    services.items_sync()
    first = services.review_claim_next(annotator=annotator_a, stage=ReviewStage.FLOWGRAPH)
    assert services.review_claim_next(annotator=annotator_b, stage=ReviewStage.FLOWGRAPH) == first
    result = explorer.items_bulk(actor=adjudicator, stage=ReviewStage.FLOWGRAPH, item_ids=[first.pk],
                                 action="required", required=1)
    assert result["done"] == 1
    assert list(Claim.objects.filter(item=first).values_list("annotator", flat=True)) == [annotator_a.pk]
    check_all([annotator_a, annotator_b])
    services.review_submit(annotator=annotator_a, item_id=first.pk, verdict="accept")
    first.refresh_from_db()
    assert first.state == ItemState.DECIDED and first.decision == "accept"

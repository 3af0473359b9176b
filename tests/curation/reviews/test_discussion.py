"""Issue #31 item 4: own verdicts, changing a verdict, discussion threads, notifications, digest."""
from __future__ import annotations

import pytest
from django.core import mail
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from curation.models import AuditEvent, Comment, Flag, ItemState, Notification, Review, ReviewItem, ReviewStage
from curation.reviews import discussion, services
from curation.reviews.claims import CurationError
from tests.curation.factories import build_lineage

FG = ReviewStage.FLOWGRAPH
REASON = "FG-UNFAITHFUL"


def take_and_submit(user, verdict="accept"):
    item = services.review_claim_next(annotator=user, stage=FG)
    assert item is not None
    services.review_submit(annotator=user, item_id=item.pk, verdict=verdict,
                           reason_codes=[REASON] if verdict == "reject" else [])
    item.refresh_from_db()
    return item


@pytest.fixture
def item(db):
    build_lineage(conversations=1)
    services.items_sync()
    return ReviewItem.objects.get(stage=FG)


# --------------------------------------------------------------------------- changing a verdict


def test_change_while_waiting_is_audited_and_counts_once(item, annotator_a, annotator_b):
    take_and_submit(annotator_a, "accept")
    discussion.verdict_change(annotator=annotator_a, item_id=item.pk, verdict="reject", reason_codes=[REASON],
                              comment="the refund branch is missing")
    review = Review.objects.get(item=item, annotator=annotator_a)
    assert (review.verdict, review.reason_codes) == ("reject", [REASON])
    item.refresh_from_db()
    assert item.review_count == 1 and item.state == ItemState.OPEN
    event = AuditEvent.objects.get(action=AuditEvent.Action.CHANGE)
    assert event.before["verdict"] == "accept" and event.after["verdict"] == "reject"
    # The other reviewer accepts: the changed verdict is what the conclusion counts.
    take_and_submit(annotator_b, "accept")
    item.refresh_from_db()
    assert item.state == ItemState.DISAGREEMENT


def test_change_refused_once_every_review_is_in(item, annotator_a, annotator_b):
    take_and_submit(annotator_a, "accept")
    take_and_submit(annotator_b, "accept")
    with pytest.raises(CurationError, match="can no longer be changed"):
        discussion.verdict_change(annotator=annotator_a, item_id=item.pk, verdict="reject", reason_codes=[REASON])
    # Same words whether the others agreed or not (disagreement case):
    other = build_lineage(conversations=1)
    services.items_sync()
    item2 = ReviewItem.objects.get(stage=FG, object_id=other.flowgraph.pk)
    assert services.review_claim_next(annotator=annotator_a, stage=FG) == item2
    services.review_submit(annotator=annotator_a, item_id=item2.pk, verdict="accept")
    take_and_submit(annotator_b, "reject")
    with pytest.raises(CurationError, match="can no longer be changed"):
        discussion.verdict_change(annotator=annotator_a, item_id=item2.pk, verdict="reject", reason_codes=[REASON])


@pytest.mark.parametrize("kwargs, message", [
    ({"verdict": "maybe"}, "accept or reject"),
    ({"verdict": "reject"}, "at least one reason"),
    ({"verdict": "reject", "reason_codes": ["NOPE"]}, "Unknown reason"),
    ({"verdict": "reject", "reason_codes": ["OTHER"]}, "needs a comment"),
])
def test_change_validates_like_submit(item, annotator_a, kwargs, message):
    take_and_submit(annotator_a, "accept")
    with pytest.raises(CurationError, match=message):
        discussion.verdict_change(annotator=annotator_a, item_id=item.pk, **kwargs)
    assert Review.objects.get(item=item, annotator=annotator_a).verdict == "accept"


def test_change_without_a_review_and_flags_follow_the_verdict(item, annotator_a, annotator_b):
    with pytest.raises(CurationError, match="not reviewed"):
        discussion.verdict_change(annotator=annotator_a, item_id=item.pk, verdict="accept")
    take_and_submit(annotator_a, "reject")
    review = Review.objects.get(item=item, annotator=annotator_a)
    Flag.objects.create(review=review, kind="node", target="N1", reason=REASON, comment="")
    discussion.verdict_change(annotator=annotator_a, item_id=item.pk, verdict="accept")
    assert not Flag.objects.filter(review=review).exists()
    review.refresh_from_db()
    assert review.reason_codes == []


# --------------------------------------------------------------------------- own verdicts


def test_my_verdicts_never_tell_agreement_from_disagreement(db, annotator_a, annotator_b):
    agreed, disputed = build_lineage(conversations=1), build_lineage(conversations=1)
    services.items_sync()
    for lin, other_verdict in ((agreed, "accept"), (disputed, "reject")):
        it = ReviewItem.objects.get(stage=FG, object_id=lin.flowgraph.pk)
        assert services.review_claim_next(annotator=annotator_a, stage=FG) == it
        services.review_submit(annotator=annotator_a, item_id=it.pk, verdict="accept")
        assert services.review_claim_next(annotator=annotator_b, stage=FG) == it
        services.review_submit(annotator=annotator_b, item_id=it.pk, verdict=other_verdict,
                               reason_codes=[REASON] if other_verdict == "reject" else [])
    rows = [discussion.describe_own(r) for r in discussion.my_verdicts(annotator=annotator_a)]
    assert [r.status for r in rows] == [discussion.ALL_IN, discussion.ALL_IN]
    assert not any(r.can_change for r in rows)


def test_my_verdicts_filters_and_overturned(item, annotator_a, annotator_b, adjudicator):
    take_and_submit(annotator_a, "accept")
    take_and_submit(annotator_b, "reject")
    services.item_resolve(adjudicator=adjudicator, item_id=item.pk, decision="reject", note="Step 3 is wrong")
    overturned = list(discussion.my_verdicts(annotator=annotator_a, status=discussion.OVERTURNED))
    assert len(overturned) == 1 and discussion.describe_own(overturned[0]).status == discussion.OVERTURNED
    assert not list(discussion.my_verdicts(annotator=annotator_b, status=discussion.OVERTURNED))
    assert len(list(discussion.my_verdicts(annotator=annotator_b, status=discussion.ALL_IN))) == 1
    assert not list(discussion.my_verdicts(annotator=annotator_a, verdict="reject"))
    assert not list(discussion.my_verdicts(annotator=annotator_a, stage=ReviewStage.CONVERSATION))


# --------------------------------------------------------------------------- notifications


def test_overturn_notifies_only_the_overruled_with_the_note(item, annotator_a, annotator_b, adjudicator):
    take_and_submit(annotator_a, "accept")
    take_and_submit(annotator_b, "reject")
    services.item_resolve(adjudicator=adjudicator, item_id=item.pk, decision="reject", note="Step 3 is wrong")
    note = Notification.objects.get()
    assert note.user == annotator_a and "Step 3 is wrong" in note.message and note.read_at is None
    assert discussion.unread_count(annotator_a) == 1 and discussion.unread_count(annotator_b) == 0
    # Reversing the decision tells the other one.
    services.item_resolve(adjudicator=adjudicator, item_id=item.pk, decision="accept", note="Step 3 is fine after all")
    assert Notification.objects.filter(user=annotator_b).count() == 1
    assert discussion.mark_read(annotator_a) == 1 and discussion.unread_count(annotator_a) == 0


def test_digest_mails_each_notification_once(settings, item, annotator_a, annotator_b, adjudicator):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    take_and_submit(annotator_a, "accept")
    take_and_submit(annotator_b, "reject")
    services.item_resolve(adjudicator=adjudicator, item_id=item.pk, decision="reject", note="Step 3 is wrong")
    settings.ALMITA_DIGEST_EMAIL = False
    with pytest.raises(CommandError, match="off"):
        call_command("send_digest")
    settings.ALMITA_DIGEST_EMAIL = True
    annotator_a.email = "a@example.org"
    annotator_a.save()
    call_command("send_digest")
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["a@example.org"]
    assert "Step 3 is wrong" in mail.outbox[0].body
    call_command("send_digest")
    assert len(mail.outbox) == 1


# --------------------------------------------------------------------------- comments


def test_thread_opens_to_a_reviewer_only_after_submitting(item, annotator_a, annotator_b):
    services.review_claim_next(annotator=annotator_b, stage=FG)  # b holds a claim, no review yet
    take_and_submit(annotator_a, "reject")
    discussion.comment_add(author=annotator_a, item_id=item.pk, body="Node 4 asks twice.")
    assert discussion.thread(annotator_b, item) is None
    with pytest.raises(CurationError, match="Submit your verdict"):
        discussion.comment_add(author=annotator_b, item_id=item.pk, body="peek")
    services.review_submit(annotator=annotator_b, item_id=item.pk, verdict="accept")
    item.refresh_from_db()
    shown = discussion.thread(annotator_b, item)
    assert [(c.body, c.shown_as) for c in shown] == [("Node 4 asks twice.", "a reviewer")]


def test_adjudicator_comment_reaches_reviewers_only_once_decided(item, annotator_a, annotator_b, adjudicator):
    take_and_submit(annotator_a, "accept")
    with pytest.raises(CurationError):  # open item: adjudicators stay out
        discussion.comment_add(author=adjudicator, item_id=item.pk, body="too early")
    take_and_submit(annotator_b, "reject")
    item.refresh_from_db()
    discussion.comment_add(author=adjudicator, item_id=item.pk, body="Which step do you mean?")
    assert discussion.thread(annotator_a, item) == []  # would say "disputed" while undecided
    assert [c.shown_as for c in discussion.thread(adjudicator, item)] == ["you"]
    services.item_resolve(adjudicator=adjudicator, item_id=item.pk, decision="reject", note="Step 3 is wrong")
    item.refresh_from_db()
    assert [c.shown_as for c in discussion.thread(annotator_a, item)] == ["an adjudicator"]


@pytest.mark.parametrize("body, message", [("   ", "Write something"), ("x" * 4001, "at most 4000")])
def test_comment_bad_input_is_refused(item, annotator_a, body, message):
    take_and_submit(annotator_a, "accept")
    with pytest.raises(CurationError, match=message):
        discussion.comment_add(author=annotator_a, item_id=item.pk, body=body)
    assert not Comment.objects.exists()


# --------------------------------------------------------------------------- pages


def test_pages_roles_and_escaping(client, item, annotator_a, annotator_b, researcher):
    take_and_submit(annotator_a, "accept")
    client.force_login(annotator_a)
    page = client.get(reverse("curation:review", args=[item.pk]))
    assert b'id="change-form"' in page.content and b'id="comment-form"' in page.content
    r = client.post(reverse("curation:comment", args=[item.pk]), {"body": "<script>alert(1)</script>",
                                                                  "next": "https://evil.example/"})
    assert r.status_code == 302 and r["Location"].startswith(f"/curation/items/{item.pk}/")
    page = client.get(reverse("curation:review", args=[item.pk]))
    assert b"<script>alert(1)</script>" not in page.content and b"&lt;script&gt;alert(1)" in page.content
    r = client.post(reverse("curation:change_verdict", args=[item.pk]), {"verdict": "reject", "reason_codes": [REASON]})
    assert r.status_code == 302 and Review.objects.get(annotator=annotator_a).verdict == "reject"
    listing = client.get(reverse("curation:my_verdicts") + "?status=waiting&page=99")
    assert listing.status_code == 200 and b"Waiting for other reviews" in listing.content
    assert client.get(reverse("curation:my_verdicts") + "?stage=%00&verdict=x&status=zz").status_code == 200
    # The reviewer who holds no review of the item cannot post to it; a researcher cannot at all.
    client.force_login(annotator_b)
    client.post(reverse("curation:comment", args=[item.pk]), {"body": "hello"})
    assert Comment.objects.count() == 1
    client.force_login(researcher)
    assert client.post(reverse("curation:comment", args=[item.pk]), {"body": "x"}).status_code == 403
    assert client.get(reverse("curation:my_verdicts")).status_code == 403
    assert client.get(reverse("curation:notifications")).status_code == 200
    assert client.post(reverse("curation:comment", args=[10**9]), {"body": "x"}).status_code in (403, 404)

"""Assignment through the explorer's bulk form and the REST API, and what the queue, home and
progress pages show (issue #30 item 4)."""
from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from rest_framework.test import APIClient

from almita_web.roles import ANNOTATOR
from curation.models import Assignment, AuditEvent, ReviewItem, ReviewStage
from curation.reviews import assignment, services
from tests.conftest import make_user

pytestmark = pytest.mark.django_db
FG = ReviewStage.FLOWGRAPH


@pytest.fixture
def items(db):
    ReviewItem.objects.bulk_create([ReviewItem(stage=FG, object_id=80_000 + k, required_reviews=2) for k in range(4)])
    return list(ReviewItem.objects.filter(stage=FG).order_by("pk"))


def _post(client, user, data, stage=FG):
    client.force_login(user)
    url = reverse("curation:explore", args=[stage])
    return client.post(reverse("curation:explore_bulk", args=[stage]), {"next": url, **data})


def _messages(resp) -> list[str]:
    return [str(m) for m in get_messages(resp.wsgi_request)]


def test_explorer_assigns_the_ticked_items(client, personas, items):
    resp = _post(client, personas["adjudicator"], {"action": "assign", "mode": "named", "assignees": "annotator_a",
                                                   "items": [items[0].pk, items[2].pk]})
    assert resp.status_code == 302
    assert "2 assignment(s) on 2 item(s) (annotator_a 2)" in " ".join(_messages(resp))
    assert set(Assignment.objects.values_list("item_id", flat=True)) == {items[0].pk, items[2].pk}
    page = client.get(reverse("curation:explore", args=[FG])).content.decode()
    assert page.count('<span class="badge assigned">annotator_a</span>') == 2


def test_explorer_assigns_the_whole_filter_only_with_the_confirmed_count(client, personas, items):
    data = {"action": "assign", "mode": "percent", "assignees": "annotator_a 50, annotator_b 50", "scope": "filter"}
    resp = _post(client, personas["adjudicator"], {**data, "confirm_count": "3"})
    assert "now matches 4 item(s)" in " ".join(_messages(resp)) and not Assignment.objects.exists()
    resp = _post(client, personas["adjudicator"], {**data, "confirm_count": "4"})
    assert Assignment.objects.count() == 8  # two places per item, two annotators: both get every item
    assert AuditEvent.objects.filter(action=AuditEvent.Action.ASSIGN).count() == 4
    resp = _post(client, personas["adjudicator"], {"action": "release", "assignees": "annotator_b", "scope": "filter",
                                                   "confirm_count": "4"})
    assert "4 assignment(s) released on 4 item(s)" in " ".join(_messages(resp))
    assert set(Assignment.objects.filter(active=True).values_list("annotator__username", flat=True)) == {"annotator_a"}


@pytest.mark.parametrize("data, message", [
    ({"mode": "named", "assignees": "annotator_a, annotator_b, adjudicator"}, "adjudicator is not an annotator"),
    ({"mode": "percent", "assignees": "annotator_a 70, annotator_b 20"}, "add up to 100"),
    ({"mode": "percent", "assignees": "annotator_a seventy"}, "write a name and a percentage"),
    ({"mode": "", "assignees": "annotator_a"}, "Choose how to assign"),
    ({"mode": "named", "assignees": "x" * 5000}, "No user named"),
])
def test_explorer_bad_input_is_a_message_never_a_500(client, personas, items, data, message):
    resp = _post(client, personas["adjudicator"], {"action": "assign", "items": [items[0].pk], **data})
    assert resp.status_code == 302 and message in " ".join(_messages(resp))
    assert not Assignment.objects.exists()


@pytest.mark.parametrize("persona", ["annotator", "researcher"])
def test_explorer_assign_needs_the_adjudicator_or_admin_role(client, personas, items, persona):
    resp = _post(client, personas[persona], {"action": "assign", "mode": "named", "assignees": "annotator_a",
                                             "items": [items[0].pk]})
    assert resp.status_code == 403 and not Assignment.objects.exists()


def test_queue_home_and_progress_pages_show_assigned_and_done(client, personas, items):
    alice = personas["annotator"]
    assignment.assign(actor=personas["adjudicator"], item_ids=[items[3].pk, items[1].pk], mode="named",
                      annotators=[alice.username])
    client.force_login(alice)
    page = client.get(reverse("curation:queue")).content.decode()
    assert 'id="assigned"' in page and f'data-item="{items[1].pk}"' in page and "0 / 2 done" in page
    first = services.review_claim_next(annotator=alice, stage=FG)
    assert first.pk == items[1].pk
    services.review_submit(annotator=alice, item_id=first.pk, verdict="accept", reason_codes=[])
    assert "1 / 2 done" in client.get(reverse("curation:queue")).content.decode()
    assert "1 / 2</strong> done" in client.get("/").content.decode()
    client.force_login(personas["adjudicator"])
    progress = client.get(reverse("curation:progress")).content.decode()
    assert f'data-assigned="{alice.username}-{FG}">2</td><td>1</td>' in progress
    # Another annotator's pages say nothing of alice's assignments.
    client.force_login(personas["annotator_b"])
    page = client.get(reverse("curation:queue")).content.decode()
    assert 'id="assigned"' not in page and alice.username not in page


# --------------------------------------------------------------------------- REST API


def _api(user=None) -> APIClient:
    api = APIClient()
    if user is not None:
        api.force_authenticate(user)
    return api


def test_api_assigns_lists_and_releases(personas, items):
    api = _api(personas["adjudicator"])
    url = reverse("api:assignments")
    resp = api.post(url, {"action": "assign", "items": [i.pk for i in items], "mode": "even",
                          "annotators": ["annotator_a", "annotator_b"]}, format="json")
    assert resp.status_code == 200, resp.content
    assert resp.json()["per_annotator"] == {"annotator_a": 4, "annotator_b": 4}
    listed = api.get(url, {"annotator": "annotator_a"}).json()
    assert listed["count"] == 4 and {r["item"] for r in listed["results"]} == {i.pk for i in items}
    resp = api.post(url, {"action": "release", "items": [items[0].pk]}, format="json")
    assert resp.json() == {"items": 1, "released": 2}
    resp = api.post(url, {"action": "assign", "items": [items[1].pk], "mode": "percent",
                          "shares": {"annotator_a": 60, "annotator_b": 40}}, format="json")
    assert resp.status_code == 200 and resp.json()["assignments"] == 0  # both hold its two places already


@pytest.mark.parametrize("body, fragment", [
    ({"action": "assign", "items": [], "mode": "named", "annotators": ["annotator_a"]}, "items"),
    ({"action": "assign", "items": ["x"], "mode": "named", "annotators": ["annotator_a"]}, "items"),
    ({"action": "assign", "items": [2**70], "mode": "named"}, "items"),
    ({"action": "assign", "items": [1]}, "Give the mode"),
    ({"action": "assign", "items": [99999999], "mode": "named", "annotators": ["annotator_a"]}, "do not exist"),
    ({"action": "steal", "items": [1]}, "action"),
    ({"action": "assign", "items": [1], "mode": "named", "annotators": ["researcher"]}, "not an annotator"),
])
def test_api_bad_input_is_a_400(personas, items, body, fragment):
    resp = _api(personas["admin"]).post(reverse("api:assignments"), body, format="json")
    assert resp.status_code == 400 and fragment in resp.content.decode(), resp.content
    assert _api(personas["admin"]).get(reverse("api:assignments"), {"item": "abc"}).status_code == 400


@pytest.mark.parametrize("persona", ["annotator", "researcher", "outsider"])
def test_api_needs_the_adjudicator_or_admin_role(personas, items, persona):
    api = _api(personas[persona])
    body = {"action": "assign", "items": [items[0].pk], "mode": "named", "annotators": ["annotator_a"]}
    assert api.post(reverse("api:assignments"), body, format="json").status_code == 403
    assert api.get(reverse("api:assignments")).status_code == 403
    assert _api().post(reverse("api:assignments"), body, format="json").status_code in (401, 403)
    assert not Assignment.objects.exists()


def test_an_annotator_created_later_can_be_assigned(personas, items):
    make_user("dora", ANNOTATOR)
    resp = _api(personas["admin"]).post(reverse("api:assignments"), {
        "action": "assign", "items": [items[0].pk], "mode": "named", "annotators": ["dora"]}, format="json")
    assert resp.status_code == 200 and resp.json()["assignments"] == 1


def test_blind_pairs_hold_while_the_annotator_has_assignments(client, personas):
    """Pinned (the state machine's blind_while_assigned rule may not meet a qualifying item in a
    short run): with an item assigned to them, an annotator's pages read the same whether the
    others agreed with them or not."""
    from django.utils import timezone

    from tests.curation.factories import build_lineage
    from tests.curation.page_invariants import blind_pair

    build_lineage(conversations=3)
    services.items_sync()
    a, b = personas["annotator"], personas["annotator_b"]
    convs = list(ReviewItem.objects.filter(stage=ReviewStage.CONVERSATION).order_by("pk"))
    for item, va, vb in ((convs[0], "accept", "accept"), (convs[1], "accept", "reject")):
        for user, verdict in ((a, va), (b, vb)):
            services._claim_upsert(ReviewItem.objects.get(pk=item.pk), user, timezone.now())
            codes = ["CV-OFF-PATH"] if verdict == "reject" else []
            services.review_submit(annotator=user, item_id=item.pk, verdict=verdict, reason_codes=codes)
    assignment.assign(actor=personas["adjudicator"], item_ids=[convs[2].pk], mode="named", annotators=[a.username])
    client.force_login(a)
    assert 'id="assigned"' in client.get(reverse("curation:queue")).content.decode()
    for item in convs[:2]:
        assert blind_pair(client, a, ReviewItem.objects.get(pk=item.pk)), item

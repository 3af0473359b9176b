"""A redelivered webhook message racing the first attempt's final write (PostgreSQL only).

`delivery_attempt` claims a delivery with a compare-and-set on its state (pending or retrying).
Through `Delivery.objects` (scoped through the webhook's project: a join) Django wrote that as
`... WHERE id IN (SELECT ... WHERE state IN (...))`, which PostgreSQL does not re-check after
waiting for the final write's row lock: the claim succeeded on a delivered row and the event was
posted again. The claim now keeps the state in its own WHERE (projects.scoping.rows_to_write)."""
from __future__ import annotations

import threading

import pytest
from django.db import connections

from projects.context import default_project, use_project
from projects.models import Project
from tests.races import postgres_only, race  # noqa: F401  (fixture)
from webhooks import services
from webhooks.models import Delivery, DeliveryState, Webhook

pytestmark = pytest.mark.django_db(transaction=True)


def a_delivery(project) -> Delivery:
    with use_project(project.pk):
        hook, _ = services.webhook_create(name="hook", url="http://127.0.0.1:9/hook", events=[])
        return Delivery.objects.create(webhook=hook, event="webhook.test", body="{}")


@pytest.fixture
def posts(monkeypatch) -> list[str]:
    sent: list[str] = []
    monkeypatch.setattr(services, "_post", lambda url, body, headers: (sent.append(url), (200, "ok", ""))[1])
    return sent


@pytest.mark.usefixtures("postgres_only")
def test_a_redelivered_message_never_posts_a_delivered_event_again(posts):
    project = default_project()
    delivery = a_delivery(project)

    def first_attempt_finishes() -> int:  # its final write, a moment before the redelivered claim
        return Delivery._base_manager.filter(pk=delivery.pk).update(state=DeliveryState.DELIVERED)

    def redelivered() -> str:
        return services.delivery_attempt(delivery_id=delivery.pk)[0]

    written, outcome = race(project.pk, first_attempt_finishes, redelivered)
    assert written == 1
    assert outcome == "skipped", "the redelivered message claimed a delivered event"
    assert posts == []
    row = Delivery._base_manager.get(pk=delivery.pk)
    assert (row.state, row.attempts) == (DeliveryState.DELIVERED, 0)


@pytest.mark.usefixtures("postgres_only")  # a second connection writes meanwhile
def test_a_final_state_is_never_overwritten_by_a_concurrent_attempt(posts, monkeypatch):
    """Two attempts both claimed (a redelivery while the first one posts): the first to finish
    decides; the other's outcome (here a 404) is not written over it."""
    delivery = a_delivery(default_project())

    def post_while_the_other_attempt_delivers(url, body, headers):
        def deliver() -> None:
            try:
                Delivery._base_manager.filter(pk=delivery.pk).update(state=DeliveryState.DELIVERED)
            finally:
                connections.close_all()

        other = threading.Thread(target=deliver)
        other.start()
        other.join(30)
        return 404, "gone", ""

    monkeypatch.setattr(services, "_post", post_while_the_other_attempt_delivers)
    with use_project(default_project().pk):
        assert services.delivery_attempt(delivery_id=delivery.pk)[0] == "failed"
    row = Delivery._base_manager.get(pk=delivery.pk)
    assert (row.state, row.attempts, row.response_status) == (DeliveryState.DELIVERED, 1, None)


def test_the_claim_keeps_to_the_current_project(posts):
    delivery = a_delivery(default_project())
    other = Project.objects.create(slug="other", name="Other")
    with use_project(other.pk):
        assert services.delivery_attempt(delivery_id=delivery.pk) == ("skipped", 0.0)
    assert posts == []
    assert Delivery._base_manager.get(pk=delivery.pk).attempts == 0
    assert Webhook._base_manager.count() == 1

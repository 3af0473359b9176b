"""Webhooks: signed deliveries checked by a real receiver, retries and backoff, secrets never
shown or logged after creation, the events of the real workflows, and the admin pages."""
from __future__ import annotations

import json
import logging
import time

import pytest
from django.urls import reverse

from tests.webhooks.receiver import Receiver
from webhooks import crypto, services
from webhooks.models import Delivery, DeliveryState, Webhook


@pytest.fixture
def fast_backoff(settings):
    settings.WEBHOOK_BACKOFF_BASE = 0.01
    settings.WEBHOOK_MAX_ATTEMPTS = 4
    settings.WEBHOOK_TIMEOUT = 2.0
    return settings


def deliver_all(sleeps: list[float] | None = None) -> list[str]:
    return [services.deliver_inline(delivery_id=pk, sleep=(sleeps.append if sleeps is not None else lambda s: None))
            for pk in Delivery.objects.filter(state__in=["pending", "retrying"]).order_by("id").values_list("pk", flat=True)]


def test_an_event_is_delivered_signed_and_the_receiver_verifies_it(db, fast_backoff, django_capture_on_commit_callbacks):
    hook, secret = services.webhook_create(name="ci", url="http://127.0.0.1:9/", events=["release.created"])
    other, _ = services.webhook_create(name="other", url="http://127.0.0.1:9/", events=["job.finished"])
    with Receiver(secret) as receiver:
        Webhook.objects.filter(pk=hook.pk).update(url=receiver.url)
        with django_capture_on_commit_callbacks(execute=True):
            services.emit("release.created", release_id=7, name="r", version=2)
        assert Delivery.objects.filter(webhook=other).count() == 0  # not subscribed
        assert deliver_all() == ["delivered"]
    [request] = receiver.received
    assert request["valid"] and not request["replay"]
    headers = request["headers"]
    assert headers[crypto.EVENT_HEADER] == "release.created"
    assert headers[crypto.SIGNATURE_HEADER].startswith("sha256=")
    assert abs(int(headers[crypto.TIMESTAMP_HEADER]) - time.time()) < 60
    body = json.loads(request["body"])
    assert body["event"] == "release.created" and body["data"] == {"release_id": 7, "name": "r", "version": 2,
                                                                   "project": "default"}
    assert secret not in request["body"].decode() and secret not in json.dumps(headers)
    d = Delivery.objects.get()
    assert (d.state, d.attempts, d.response_status, str(d.uuid)) == ("delivered", 1, 200, headers[crypto.DELIVERY_HEADER])


def test_nothing_is_sent_when_the_transaction_rolls_back(db, django_capture_on_commit_callbacks):
    services.webhook_create(name="ci", url="http://127.0.0.1:9/")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.emit("job.finished", job_id=1)
    assert len(callbacks) == 1 and not Delivery.objects.exists()  # only after a commit


def test_retries_with_backoff_after_a_500_then_delivered(db, fast_backoff, django_capture_on_commit_callbacks):
    hook, secret = services.webhook_create(name="ci", url="http://127.0.0.1:9/")
    with Receiver(secret, statuses=[500, 503]) as receiver:
        Webhook.objects.filter(pk=hook.pk).update(url=receiver.url)
        with django_capture_on_commit_callbacks(execute=True):
            services.emit("job.finished", job_id=3, status="succeeded")
        sleeps: list[float] = []
        assert deliver_all(sleeps) == ["delivered"]
    assert [r["status"] for r in receiver.received] == [500, 503, 200]
    assert sleeps == [0.01, 0.02]  # base, then doubled
    # the same delivery id on every attempt, each signed afresh
    assert len({r["headers"][crypto.DELIVERY_HEADER] for r in receiver.received}) == 1
    assert all(r["valid"] for r in receiver.received)
    assert Delivery.objects.get().attempts == 3


def test_gives_up_after_the_last_attempt_and_never_retries_a_4xx(db, fast_backoff, django_capture_on_commit_callbacks):
    hook, secret = services.webhook_create(name="ci", url="http://127.0.0.1:9/")
    with Receiver(secret, statuses=[500] * 10) as receiver:
        Webhook.objects.filter(pk=hook.pk).update(url=receiver.url)
        with django_capture_on_commit_callbacks(execute=True):
            services.emit("job.finished", job_id=3)
        assert deliver_all() == ["failed"]
        d = Delivery.objects.get()
        assert (d.state, d.attempts, d.error) == ("failed", 4, "HTTP 500 after 4 attempts")
        receiver.statuses = [410]
        with django_capture_on_commit_callbacks(execute=True):
            services.emit("job.finished", job_id=4)
        assert deliver_all() == ["failed"]
    assert Delivery.objects.order_by("-id").first().error == "HTTP 410 (not retried)"
    # unreachable: transport errors are retried, then the row says why
    Webhook.objects.filter(pk=hook.pk).update(url="http://127.0.0.1:9/")
    with django_capture_on_commit_callbacks(execute=True):
        services.emit("job.finished", job_id=5)
    assert deliver_all() == ["failed"]
    last = Delivery.objects.order_by("-id").first()
    assert last.attempts == 4 and "after 4 attempts" in last.error and last.response_status is None
    assert services.delivery_attempt(delivery_id=last.pk) == ("skipped", 0.0)  # final rows are never resent


def test_replays_and_forgeries_are_rejected_by_the_documented_check():
    body, secret = b'{"event": "x"}', "whsec_0123456789abcdef"
    now = time.time()
    sig = crypto.sign(secret, int(now), body)
    assert crypto.verify(secret, str(int(now)), body, sig, now=now)
    assert not crypto.verify(secret, str(int(now)), body + b" ", sig, now=now)  # tampered body
    assert not crypto.verify("whsec_another-secret-xx", str(int(now)), body, sig, now=now)
    assert not crypto.verify(secret, str(int(now) - 301), body, crypto.sign(secret, int(now) - 301, body), now=now)
    assert not crypto.verify(secret, "soon", body, sig, now=now)


def test_secrets_are_encrypted_at_rest_and_never_logged(db, fast_backoff, caplog, settings,
                                                        django_capture_on_commit_callbacks):
    caplog.set_level(logging.DEBUG)
    hook, secret = services.webhook_create(name="ci", url="http://127.0.0.1:9/")
    assert secret.startswith("whsec_") and len(secret) > 40
    row = Webhook.objects.filter(pk=hook.pk).values().get()
    assert secret not in json.dumps(row, default=str) and row["secret_hint"] == "…" + secret[-4:]
    assert crypto.decrypt(row["secret_encrypted"]) == secret
    with Receiver(secret) as receiver:
        Webhook.objects.filter(pk=hook.pk).update(url=receiver.url)
        with django_capture_on_commit_callbacks(execute=True):
            services.emit("item.adjudicated", item_id=1)
        deliver_all()
    assert receiver.received and secret not in caplog.text
    delivery_rows = json.dumps(list(Delivery.objects.values()), default=str)
    assert secret not in delivery_rows
    with pytest.raises(services.WebhookError, match="16 characters"):
        services.webhook_create(name="x", url="http://a/", secret="short")
    with pytest.raises(services.WebhookError, match="unknown event"):
        services.webhook_create(name="x", url="http://a/", events=["everything"])
    # A new SECRET_KEY cannot read the old secrets: the delivery fails and says what to do.
    settings.SECRET_KEY = "another-secret-key-for-this-test-" + "x" * 20
    with django_capture_on_commit_callbacks(execute=True):
        services.emit("item.adjudicated", item_id=2)
    assert deliver_all() == ["failed"]
    assert "set a new secret" in Delivery.objects.order_by("-id").first().error


# --------------------------------------------------------------------------- events of the real workflows


def test_the_workflows_emit_their_events(db, settings, small_release_for_hooks, annotator_a, annotator_b, adjudicator,
                                         django_capture_on_commit_callbacks):
    from curation.models import ReviewStage
    from curation.releases.services import release_create
    from curation.reviews import services as curation
    from evaluation import services as evaluation
    from generation import services as generation
    from tests.curation.factories import build_lineage
    from tests.curation.reviews.test_services import review
    from tests.generation.test_jobs import JOB_CONFIG

    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"  # the job is cancelled before any call
    services.webhook_create(name="all", url="http://127.0.0.1:9/")
    with django_capture_on_commit_callbacks(execute=True):
        build_lineage(conversations=1)
        curation.items_sync()
        review(annotator_a, ReviewStage.FLOWGRAPH, "accept")
        item = review(annotator_b, ReviewStage.FLOWGRAPH, "reject")
        curation.item_resolve(adjudicator=adjudicator, item_id=item.pk, decision="accept", note="fine")
        job = generation.job_create(config=JOB_CONFIG, enqueue=False)
        generation.job_cancel(job=job)
        release_create(name="hooks", kind="automatic")
        agent = evaluation.reference_agents_ensure()[0]
        evaluation.run_execute_inline(run=evaluation.run_create(agent=agent, release=small_release_for_hooks,
                                                                similarity="lexical", start=False), workers=1)
    events = {e: json.loads(b)["data"] for e, b in Delivery.objects.order_by("id").values_list("event", "body")}
    assert set(events) == {"item.fully_reviewed", "item.adjudicated", "job.finished", "release.created",
                           "evaluation.finished"}
    assert events["item.fully_reviewed"]["item_id"] == item.pk and events["item.fully_reviewed"]["state"] == "disagreement"
    assert events["item.adjudicated"]["decision"] == "accept"
    assert events["job.finished"] == {"job_id": job.pk, "name": job.name, "status": "cancelled", "error": "",
                                      "project": "default"}
    assert events["release.created"]["name"] == "hooks"
    finished = events["evaluation.finished"]
    assert finished["status"] == "succeeded" and finished["metrics"]["test_correct"] == 1.0


@pytest.fixture
def small_release_for_hooks(db):
    from tests.evaluation.conftest import make_release

    return make_release(name="hooks-eval")


# --------------------------------------------------------------------------- pages


@pytest.mark.parametrize("who,status", [("admin_user", 200), ("researcher", 403), ("annotator_a", 403), (None, 302)])
def test_webhook_pages_are_for_admins(db, client, request, who, status):
    hook, _ = services.webhook_create(name="ci", url="http://127.0.0.1:9/")
    if who:
        client.force_login(request.getfixturevalue(who))
    for url in (reverse("webhooks:list"), reverse("webhooks:detail", args=[hook.pk])):
        assert client.get(url).status_code == status
    r = client.post(reverse("webhooks:test", args=[hook.pk]))
    assert r.status_code == (302 if who == "admin_user" else status)
    if who != "admin_user":
        assert not Delivery.objects.exists()
        assert client.post(reverse("webhooks:create"), {"name": "x", "url": "http://a/"}).status_code in (302, 403)
        assert Webhook.objects.count() == 1


def test_register_see_the_secret_once_send_a_test_event(client, admin_user, fast_backoff,
                                                       django_capture_on_commit_callbacks):
    client.force_login(admin_user)
    assert client.get(reverse("webhooks:create")).status_code == 405
    with Receiver() as receiver:
        r = client.post(reverse("webhooks:create"), {"name": "ci <b>", "url": receiver.url,
                                                     "events": ["release.created", "evaluation.finished"]})
        assert r.status_code == 200 and "no-store" in r["Cache-Control"]
        hook = Webhook.objects.get()
        page = r.content.decode()
        secret = page.split('<code id="webhook-secret">')[1].split("<")[0]
        assert secret.startswith("whsec_") and crypto.decrypt(hook.secret_encrypted) == secret
        assert "ci &lt;b&gt;" in page
        receiver.secret = secret
        for url in (reverse("webhooks:list"), reverse("webhooks:detail", args=[hook.pk])):
            shown = client.get(url).content.decode()
            assert secret not in shown and hook.secret_hint in shown
        with django_capture_on_commit_callbacks(execute=True):
            assert client.post(reverse("webhooks:test", args=[hook.pk])).status_code == 302
        assert deliver_all() == ["delivered"]
    assert receiver.events()[0]["event"] == "webhook.test"
    log = client.get(reverse("webhooks:detail", args=[hook.pk])).content.decode()
    assert "webhook.test" in log and "HTTP 200" in log and "Delivered" in log and secret not in log
    # a typed secret is never echoed back; a bad form keeps it out of the page too
    r = client.post(reverse("webhooks:create"), {"name": "x", "url": "not a url", "secret": "my-own-secret-123456"})
    assert r.status_code == 400 and b"my-own-secret-123456" not in r.content
    r = client.post(reverse("webhooks:create"), {"name": "mine", "url": "http://hooks.example.org/", "secret": "my-own-secret-123456"})
    assert r.status_code == 200 and b"my-own-secret-123456" not in r.content and "3456" in r.content.decode()
    # rotation shows the new secret once
    r = client.post(reverse("webhooks:rotate", args=[hook.pk]))
    new = r.content.decode().split('<code id="webhook-secret">')[1].split("<")[0]
    hook.refresh_from_db()
    assert new != secret and crypto.decrypt(hook.secret_encrypted) == new
    client.post(reverse("webhooks:active", args=[hook.pk]), {"active": "0"})
    hook.refresh_from_db()
    assert not hook.active


def test_a_run_that_fails_also_reports_evaluation_finished(db, small_release_for_hooks,
                                                           django_capture_on_commit_callbacks):
    from evaluation import services as evaluation

    services.webhook_create(name="evals", url="http://127.0.0.1:9/", events=["evaluation.finished"])
    agent = evaluation.reference_agents_ensure()[0]
    with django_capture_on_commit_callbacks(execute=True):
        run = evaluation.run_create(agent=agent, release=small_release_for_hooks, similarity="lexical")
        evaluation.run_fail(run_id=run.pk, error="no LLM endpoint")
    data = json.loads(Delivery.objects.get().body)["data"]
    assert (data["run_id"], data["status"], data["error"], data["kind"]) == (run.pk, "failed", "no LLM endpoint",
                                                                             "evaluationrun")

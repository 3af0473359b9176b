"""Analytics precomputed by the worker (issue #31, pages ≤ 200 ms p95 at 50,000 items): the stored
table equals a fresh computation whenever it says it is current, it says it is stale after every
change, the page and the CSV answer from it in a constant number of queries, and changes ask for
one debounced recompute."""
from __future__ import annotations

import csv
import io

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from curation.agreement import precompute
from curation.models import Claim, ItemState, Review, ReviewItem, ReviewStage
from curation.reviews.claims import CurationError
from curation.reviews.services import item_resolve, items_sync, review_submit
from generation.models import Conversation, GenerationJob, LLMCall
from tests.loop.helpers import build_graph_with_conversations

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(annotator_a, annotator_b, annotator_c, adjudicator):
    cg = build_graph_with_conversations(n=5)
    convs = list(Conversation.objects.filter(path__conversation_graph=cg).order_by("pk"))
    job = GenerationJob.objects.create(name="hand-made", config={})
    for i, c in enumerate(convs[:2]):
        Conversation.objects.filter(pk=c.pk).update(job=job, key=f"conversations:{i}:1", mode="llm")
        LLMCall.objects.create(job=job, stage="conversations", key=f"conversations:{i}:1", model="m-a",
                               template="A.6", template_version="v1", prompt_hash=f"h{i}",
                               request={"temperature": 0.7}, cost_usd="0.010000")
    items_sync()
    items = list(ReviewItem.objects.filter(stage__in=[ReviewStage.CONVERSATION, ReviewStage.CONVERSATION_GRAPH])
                 .order_by("pk"))
    return {"items": items, "annotators": [annotator_a, annotator_b, annotator_c], "adjudicator": adjudicator,
            "job": job, "convs": convs}


def verdict(item: ReviewItem, user, value: str = "accept") -> None:
    """`user` takes the item and gives the verdict (CurationError when it takes no more)."""
    item.refresh_from_db()
    if item.state != ItemState.OPEN or Review.objects.filter(item=item, annotator=user).exists():
        raise CurationError("takes no verdict from this user")
    now = timezone.now()
    Claim.objects.create(item=item, annotator=user, claimed_at=now, expires_at=now + timezone.timedelta(hours=1))
    review_submit(annotator=user, item_id=item.pk, verdict=value,
                  reason_codes=[] if value == "accept" else ["OTHER"], comment="" if value == "accept" else "off")


def stored_tables():
    bundle = precompute.status(ask=False).bundle
    return bundle and {"tables": bundle["tables"], "economics": bundle["economics"]}


STEPS = st.lists(st.one_of(
    st.tuples(st.just("verdict"), st.integers(0, 5), st.integers(0, 2), st.sampled_from(["accept", "reject"])),
    st.tuples(st.just("resolve"), st.integers(0, 5), st.sampled_from(["accept", "reject"])),
    st.tuples(st.just("llm_call"), st.integers(0, 4), st.sampled_from(["m-b", "m-c"])),
    st.just(("recompute",)),
), min_size=1, max_size=12)


@hsettings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_stored_figures_equal_a_fresh_computation_whenever_current(world, steps):
    with transaction.atomic():
        precompute.forget()  # ids of a rolled-back example come back
        changed = True  # nothing stored yet
        for step in steps:
            try:
                with transaction.atomic():
                    if step[0] == "verdict":
                        verdict(world["items"][step[1]], world["annotators"][step[2]], step[3])
                    elif step[0] == "resolve":
                        item_resolve(adjudicator=world["adjudicator"], item_id=world["items"][step[1]].pk,
                                     decision=step[2], note="property")
                    elif step[0] == "llm_call":
                        c = world["convs"][step[1]]
                        Conversation.objects.filter(pk=c.pk).update(job=world["job"], key=f"conversations:{step[1]}:1")
                        LLMCall.objects.create(job=world["job"], stage="conversations", key=f"conversations:{step[1]}:1",
                                               model=step[2], template="A.6", template_version="v2",
                                               prompt_hash=f"p{step[1]}{step[2]}", request={}, cost_usd="0.5")
                    else:
                        precompute.recompute()
                        changed = False
                        continue
                changed = True
            except CurationError:
                pass
            state = precompute.status(ask=False)
            if changed:
                assert state.stale, step
            if not state.stale:
                assert stored_tables() == precompute.compute(), steps
        precompute.recompute()
        assert not precompute.status(ask=False).stale and stored_tables() == precompute.compute()
        transaction.set_rollback(True)


def test_staleness_flips_on_a_change_and_back_after_a_recompute(world):
    a, b = world["annotators"][:2]
    assert precompute.status(ask=False).bundle is None
    precompute.recompute()
    assert not precompute.status(ask=False).stale
    verdict(world["items"][0], a)
    assert precompute.status(ask=False).stale
    before = stored_tables()
    precompute.recompute()
    assert not precompute.status(ask=False).stale and stored_tables() != before
    verdict(world["items"][0], b, "reject")
    item_resolve(adjudicator=world["adjudicator"], item_id=world["items"][0].pk, decision="accept", note="ok")
    assert precompute.status(ask=False).stale
    precompute.recompute()
    assert not precompute.status(ask=False).stale and stored_tables() == precompute.compute()


@pytest.fixture
def queued(monkeypatch):
    """Stands in for the broker: the countdown of every recompute queued."""
    calls: list[float] = []
    monkeypatch.setattr(precompute, "_enqueue", calls.append)
    return calls


def test_page_states_computing_recomputing_current(client, researcher, world, queued):
    client.force_login(researcher)
    url = reverse("curation:analytics")
    html = client.get(url).content.decode()
    assert "Computing…" in html and 'id="analytics-table"' not in html and queued == [0]
    assert client.get(reverse("curation:analytics_status")).json() == {"stored": False, "stale": True,
                                                                       "computed_at": None}
    client.get(url)
    assert queued == [0]  # at most one pending
    verdict(world["items"][0], world["annotators"][1])
    precompute.recompute()  # the worker
    html = client.get(url).content.decode()
    assert "Figures as of" in html and "Recomputing" not in html and "Computing…" not in html
    verdict(world["items"][0], world["annotators"][0])
    queued.clear()
    html = client.get(url).content.decode()
    shown = timezone.localtime(precompute.status(ask=False).computed_at).strftime("%H:%M:%S")
    assert f"Recomputing… (figures as of <time" in html and f">{shown}</time>" in html
    assert 'id="analytics-table"' in html and queued == [0]
    status = client.get(reverse("curation:analytics_status")).json()
    assert status["stored"] and status["stale"] and status["computed_at"]
    precompute.recompute()
    assert client.get(reverse("curation:analytics_status")).json()["stale"] is False
    assert "Recomputing" not in client.get(url).content.decode()


def test_csv_is_503_until_computed_then_carries_computed_at(client, admin_user, world, queued):
    client.force_login(admin_user)
    resp = client.get(reverse("curation:analytics_csv"))
    assert resp.status_code == 503 and int(resp["Retry-After"]) > 0 and queued == [0]
    verdict(world["items"][0], world["annotators"][0])
    verdict(world["items"][0], world["annotators"][1])
    bundle = precompute.recompute()
    resp = client.get(reverse("curation:analytics_csv"))
    rows = list(csv.DictReader(io.StringIO(resp.content.decode())))
    assert resp.status_code == 200 and rows and "X-Analytics-Stale" not in resp
    assert {r["computed_at"] for r in rows} == {bundle["computed_at"].isoformat(timespec="seconds")}
    assert any(r["decided"] == "1" and r["acceptance"] == "1.0000" for r in rows)
    verdict(world["items"][1], world["annotators"][0])
    resp = client.get(reverse("curation:analytics_csv"))  # the stored figures, said to be stale
    assert resp.status_code == 200 and resp["X-Analytics-Stale"] == "recomputing"


def test_only_researchers_and_admins(client, annotator_a, adjudicator, outsider, world, queued):
    urls = [reverse("curation:analytics"), reverse("curation:analytics_csv"), reverse("curation:analytics_status")]
    for url in urls:
        assert client.get(url).status_code == 302
    for user in (annotator_a, adjudicator, outsider):
        client.force_login(user)
        for url in urls:
            assert client.get(url).status_code == 403, (user, url)
    assert queued == [] and precompute.status(ask=False).bundle is None  # nothing asked by them
    assert client.post(reverse("curation:analytics_status")).status_code in (403, 405)


def _page_queries(client) -> list[str]:
    client.get(reverse("curation:analytics"))  # the session's first write is not the page's
    with CaptureQueriesContext(connection) as ctx:
        resp = client.get(reverse("curation:analytics"), {"stage": "all", "slice": "mode"})
    assert resp.status_code == 200 and 'id="analytics-table"' in resp.content.decode()
    return [q["sql"] for q in ctx.captured_queries]


def test_page_queries_do_not_grow_with_the_items(client, researcher, world, queued):
    client.force_login(researcher)
    verdict(world["items"][0], world["annotators"][0])
    precompute.recompute()
    few = _page_queries(client)
    for i in range(1, 6):
        for user in world["annotators"][:2]:
            verdict(world["items"][i], user)
    precompute.recompute()
    many = _page_queries(client)
    assert len(many) == len(few) == 2, many  # the user (session) and the change mark
    # Of the review tables, only the change mark is read.
    assert len([q for q in many if "curation_review" in q]) == 1


def test_changes_ask_for_one_debounced_recompute(world, queued, django_capture_on_commit_callbacks):
    a, b, c = world["annotators"]
    with django_capture_on_commit_callbacks(execute=True):
        verdict(world["items"][0], a)
        verdict(world["items"][0], b)
        verdict(world["items"][1], c)
    assert queued == [precompute.DEBOUNCE_SECONDS]  # one, however many changes
    with django_capture_on_commit_callbacks(execute=True):
        verdict(world["items"][1], a)
    assert len(queued) == 1  # still pending
    precompute.recompute()  # the task starts: the next change asks again
    with django_capture_on_commit_callbacks(execute=True):
        verdict(world["items"][2], a)
    assert len(queued) == 2


def test_a_broker_outage_leaves_nothing_pending(world, monkeypatch):
    def down(countdown):
        raise ConnectionError("broker down")

    monkeypatch.setattr(precompute, "_enqueue", down)
    assert precompute.request_recompute() is False
    calls = []
    monkeypatch.setattr(precompute, "_enqueue", calls.append)
    assert precompute.request_recompute() is True and calls == [precompute.DEBOUNCE_SECONDS]


def test_inline_mode_computes_on_the_page_and_changes_queue_nothing(client, researcher, world, monkeypatch,
                                                                    analytics_inline, django_capture_on_commit_callbacks):
    """With CELERY_TASK_ALWAYS_EAGER there is no worker: the page computes stale figures itself."""
    runs = []
    real = precompute.recompute
    monkeypatch.setattr(precompute, "recompute", lambda: runs.append(1) or real())
    with django_capture_on_commit_callbacks(execute=True):
        verdict(world["items"][0], world["annotators"][0])
    assert runs == []
    client.force_login(researcher)
    html = client.get(reverse("curation:analytics")).content.decode()
    assert runs == [1] and "Figures as of" in html and 'id="analytics-table"' in html
    client.get(reverse("curation:analytics"))
    assert runs == [1]  # current: read, not computed


def test_a_later_recompute_wins_and_a_reset_database_is_recomputed(world):
    from django.core.cache import cache

    past = timezone.now() - timezone.timedelta(hours=1)
    # Figures a cache kept from a database since recreated: larger ids than today's.
    cache.set(precompute.STORE_KEY, {"mark": (10**9,) * 5, "started_at": past, "computed_at": past,
                                     "tables": {}, "economics": {}}, None)
    assert precompute.status(ask=False).stale
    precompute.recompute()
    assert not precompute.status(ask=False).stale and stored_tables() == precompute.compute()
    # An overlapping recompute that started earlier and finishes later does not overwrite.
    later = precompute.status(ask=False).bundle
    cache.set(precompute.STORE_KEY, {**later, "started_at": timezone.now() + timezone.timedelta(minutes=1)}, None)
    verdict(world["items"][0], world["annotators"][0])
    precompute.recompute()
    assert precompute.status(ask=False).bundle["mark"] == later["mark"]


def test_a_page_polling_during_a_recompute_asks_for_no_second_one(client, researcher, world, queued, monkeypatch):
    client.force_login(researcher)
    seen = []
    real = precompute.compute

    def compute_while_polled():
        seen.append(client.get(reverse("curation:analytics_status")).json())
        return real()

    monkeypatch.setattr(precompute, "compute", compute_while_polled)
    precompute.recompute()
    assert seen == [{"stored": False, "stale": True, "computed_at": None}] and queued == []
    assert client.get(reverse("curation:analytics_status")).json()["stale"] is False
    verdict(world["items"][0], world["annotators"][0])
    client.get(reverse("curation:analytics_status"))
    assert queued == [0]  # stale and nothing running: asked at once

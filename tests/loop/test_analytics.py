"""Analytics by generator setting and curation economics on hand-made data, hand-checked numbers."""
import csv
import io
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from curation.agreement.analytics import stage_analytics, wilson
from curation.agreement.economics import job_economics
from curation.models import AuditEvent, ReviewItem, ReviewStage
from curation.reviews.services import item_resolve
from generation.models import Conversation, CurationStatus, GenerationJob, LLMCall, Test

from .helpers import build_graph_with_conversations, decide, item_of

pytestmark = pytest.mark.django_db


def test_wilson_by_hand():
    # p = 1/2, n = 2: centre 0.5, half-width 1.96 * sqrt(0.125 + 0.2401) / 2.9207 = 0.4055
    rate, low, high = wilson(1, 2)
    assert rate == 0.5 and low == pytest.approx(0.0945, abs=1e-4) and high == pytest.approx(0.9055, abs=1e-4)
    assert wilson(0, 0) == (None, None, None)
    assert wilson(3, 3)[2] == 1.0


@pytest.fixture
def five(annotator_a, annotator_b, analytics_inline):
    cg = build_graph_with_conversations(n=5)
    convs = list(Conversation.objects.filter(path__conversation_graph=cg).order_by("pk"))
    assert len(convs) == 5
    job = GenerationJob.objects.create(name="hand-made", config={})
    for i, c in enumerate(convs[:2]):
        Conversation.objects.filter(pk=c.pk).update(job=job, key=f"conversations:{i}:1", mode="llm")
        LLMCall.objects.create(job=job, stage="conversations", key=f"conversations:{i}:1", model="m-a",
                               template="A.6", template_version="v1", prompt_hash=f"h{i}",
                               request={"temperature": 0.7}, cost_usd="0.010000" if i == 0 else "0.020000")
    return job, convs


def test_analytics_by_model_and_mode(five, annotator_a, annotator_b, adjudicator, client, researcher):
    job, c = five
    ab = [annotator_a, annotator_b]
    decide(item_of(ReviewStage.CONVERSATION, c[0]), ab)
    decide(item_of(ReviewStage.CONVERSATION, c[1]), ab, "reject", ["CV-OFF-PATH"])
    decide(item_of(ReviewStage.CONVERSATION, c[2]), [annotator_a])
    decide(item_of(ReviewStage.CONVERSATION, c[2]), [annotator_b], "reject", ["CV-OFF-PATH"])
    item_resolve(adjudicator=adjudicator, item_id=item_of(ReviewStage.CONVERSATION, c[2]).pk, decision="accept",
                 note="fine")
    decide(item_of(ReviewStage.CONVERSATION, c[3]), ab)
    decide(item_of(ReviewStage.CONVERSATION, c[4]), ab, "reject", ["OTHER"], comment="rude")
    data = stage_analytics(ReviewStage.CONVERSATION)
    by_model = {r["value"]: r for r in data["model"]}
    llm, none = by_model["m-a"], by_model["none (no LLM)"]
    assert (llm["items"], llm["decided"], llm["acceptance"]) == (2, 2, 0.5)
    assert llm["acceptance_ci"] == pytest.approx((0.0945, 0.9055), abs=1e-4)
    assert llm["percent_agreement"] == 1.0 and llm["kappa"] == 1.0 and llm["adjudication"] == 0.0
    assert none["items"] == 3 and none["acceptance"] == pytest.approx(2 / 3)
    assert none["percent_agreement"] == pytest.approx(2 / 3) and none["adjudication"] == pytest.approx(1 / 3)
    assert none["top_reasons"] == [("OTHER", 2), ("CV-OFF-PATH", 1)]
    assert {r["value"] for r in data["temperature"]} == {"0.7", "none (no LLM)"}
    assert {r["value"]: r["items"] for r in data["prompt"]} == {"A.6 v1": 2, "none (no LLM)": 3}
    assert {r["value"]: r["items"] for r in data["mode"]} == {"llm": 2, "offline": 3}
    assert {r["value"] for r in data["sampler"]} == {"coverage"}
    # The page and the CSV (researchers and admins only)
    assert client.get(reverse("curation:analytics")).status_code == 302
    client.force_login(annotator_a)
    assert client.get(reverse("curation:analytics")).status_code == 403
    client.force_login(researcher)
    page = client.get(reverse("curation:analytics")).content.decode()
    assert "Analytics by generator setting" in page and "<svg class=\"bars\"" in page and "m-a" in page
    rows = list(csv.reader(io.StringIO(client.get(reverse("curation:analytics_csv")).content.decode())))
    row = next(r for r in rows if r[:3] == ["conversation", "model", "m-a"])
    assert row[3:6] == ["2", "2", "0.5000"] and row[6:8] == ["0.0945", "0.9055"]


def test_economics_claim_to_verdict_idle_left_out(five, annotator_a, annotator_b, adjudicator):
    job, c = five
    i0, i1 = item_of(ReviewStage.CONVERSATION, c[0]), item_of(ReviewStage.CONVERSATION, c[1])
    t0 = timezone.now() - timedelta(hours=2)

    def ev(actor, item, action, minutes):
        AuditEvent.objects.create(actor=actor, item=item, action=action, at=t0 + timedelta(minutes=minutes))

    A, B = annotator_a, annotator_b
    ev(A, i0, "claim", 0), ev(A, i0, "verdict", 3)     # 3 min
    ev(B, i0, "claim", 0), ev(B, i0, "verdict", 5)     # 5 min
    ev(A, i1, "claim", 10), ev(A, i1, "verdict", 12)   # 2 min
    ev(B, i1, "claim", 10), ev(B, i1, "verdict", 40)   # 30 min: idle, left out
    ev(adjudicator, i0, "claim", 50), ev(adjudicator, i1, "resolve", 54)  # 4 adjudication minutes
    Conversation.objects.filter(pk=c[0].pk).update(status=CurationStatus.ACCEPTED)
    Test.objects.filter(conversation=c[0]).update(job=job, status=CurationStatus.ACCEPTED)
    k = Test.objects.filter(conversation=c[0]).count()
    assert k >= 1
    e = job_economics(job)
    assert e["llm_cost_usd"] == pytest.approx(0.03)
    assert e["annotator_minutes"] == pytest.approx(10.0) and e["left_out_as_idle"] == 1 and e["verdicts"] == 4
    assert e["adjudication_minutes"] == pytest.approx(4.0) and e["resolutions"] == 1
    assert e["accepted_tests"] == k
    assert e["cost_per_accepted_test"] == pytest.approx(0.03 / k)
    assert e["minutes_per_accepted_test"] == pytest.approx(14.0 / k)
    assert ReviewItem.objects.filter(pk__in=[i0.pk, i1.pk]).count() == 2
    # A query of item ids (how release_economics passes a release's items) counts the same minutes
    # as the ids themselves, the adjudicator's resolution included.
    from curation.agreement.economics import review_minutes
    by_query = review_minutes(ReviewItem.objects.filter(pk__in=[i0.pk, i1.pk]).values_list("pk", flat=True))
    assert by_query == review_minutes([i0.pk, i1.pk]) and by_query["resolutions"] == 1

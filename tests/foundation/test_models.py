"""Every database constraint of the data model, and the job status transition table."""
import pytest
from django.db import IntegrityError, transaction
from datetime import timedelta

from django.utils import timezone

from curation.models import Claim, Release, Resolution, Review, ReviewItem
from evaluation.models import Agent, EvaluationRun, TestResult
from generation.models import (
    JOB_TRANSITIONS,
    Api,
    Conversation,
    ConversationGraph,
    Discard,
    Flowgraph,
    GenerationJob,
    IllegalTransition,
    Intent,
    JobStatus,
    LLMCall,
    Procedure,
    SampledPath,
    StageProgress,
    Test,
)

pytestmark = pytest.mark.django_db


def violates(fn) -> bool:
    try:
        with transaction.atomic():
            fn()
    except IntegrityError:
        return True
    return False


@pytest.fixture
def chain():
    job = GenerationJob.objects.create(name="j")
    intent = Intent.objects.create(client="shop", issue="order missing", name="missing order", job=job, key="intents/0")
    procedure = Procedure.objects.create(intent=intent, text="1. Ask for the order id.", job=job, key="procedures/0")
    api = Api.objects.create(procedure=procedure, name="get_order", parameters=[{"name": "order_id", "type": "int", "required": True}])
    flow = Flowgraph.objects.create(procedure=procedure, data={"nodes": [], "edges": []})
    cg = ConversationGraph.objects.create(flowgraph=flow, data={})
    path = SampledPath.objects.create(conversation_graph=cg, node_ids=["N0", "N1"])
    conv = Conversation.objects.create(path=path, procedure=procedure, messages=[{"role": "user", "content": "hi"}])
    return {"job": job, "intent": intent, "procedure": procedure, "api": api, "flow": flow, "cg": cg, "path": path, "conv": conv}


def test_lineage_and_cascade_delete(chain):
    Test.objects.create(conversation=chain["conv"], position=1, expected_type="reply", expected_text="hello")
    assert chain["conv"].procedure.intent == chain["intent"]
    chain["intent"].delete()
    assert not Test.objects.exists() and not Flowgraph.objects.exists() and not Api.objects.exists()


def test_status_and_origin_must_be_known(chain):
    assert violates(lambda: Intent.objects.create(client="c", issue="i", name="n", status="maybe"))
    assert violates(lambda: Intent.objects.create(client="c", issue="i", name="n", origin="alien"))
    assert not violates(lambda: Intent.objects.create(client="c", issue="i", name="n", status="excluded", origin="imported"))


def test_job_key_unique_within_job_only(chain):
    job = chain["job"]
    assert violates(lambda: Intent.objects.create(client="c", issue="i", name="n", job=job, key="intents/0"))
    other = GenerationJob.objects.create()
    assert not violates(lambda: Intent.objects.create(client="c", issue="i", name="n", job=other, key="intents/0"))
    # Empty keys never collide.
    Intent.objects.create(client="c", issue="i", name="a", job=job)
    assert not violates(lambda: Intent.objects.create(client="c", issue="i", name="b", job=job))


def test_import_key_unique_without_job():
    Intent.objects.create(client="c", issue="i", name="n", origin="imported", key="file:abc")
    assert violates(lambda: Intent.objects.create(client="c", issue="i", name="n", origin="imported", key="file:abc"))


def test_api_name_unique_per_procedure(chain):
    assert violates(lambda: Api.objects.create(procedure=chain["procedure"], name="get_order"))


def test_noise_rate_range(chain):
    assert violates(lambda: ConversationGraph.objects.create(flowgraph=chain["flow"], data={}, noise_rate=1.5))
    assert violates(lambda: ConversationGraph.objects.create(flowgraph=chain["flow"], data={}, noise_rate=-0.1))


def test_test_shape_and_position(chain):
    conv = chain["conv"]
    assert violates(lambda: Test.objects.create(conversation=conv, position=1, expected_type="api_call", expected_api_name=""))
    assert violates(lambda: Test.objects.create(conversation=conv, position=1, expected_type="reply", expected_api_name="get_order"))
    assert violates(lambda: Test.objects.create(conversation=conv, position=1, expected_type="guess"))
    Test.objects.create(conversation=conv, position=1, expected_type="api_call", expected_api_name="get_order", expected_parameters={"order_id": 1})
    assert violates(lambda: Test.objects.create(conversation=conv, position=1, expected_type="reply", expected_text="x"))


def test_test_expected_property(chain):
    t = Test.objects.create(conversation=chain["conv"], position=3, expected_type="api_call", expected_api_name="get_order", expected_parameters={"order_id": 7})
    assert t.expected == {"type": "api_call", "name": "get_order", "parameters": {"order_id": 7}}


def test_job_status_and_finish_time_constraints():
    assert violates(lambda: GenerationJob.objects.create(status="paused"))
    assert violates(lambda: GenerationJob.objects.create(status="succeeded"))  # terminal without finished_at
    assert violates(lambda: GenerationJob.objects.create(status="running", finished_at=timezone.now()))
    assert not violates(lambda: GenerationJob.objects.create(status="failed", finished_at=timezone.now()))


def test_progress_discard_llmcall_constraints(chain):
    job = chain["job"]
    StageProgress.objects.create(job=job, stage="intents")
    assert violates(lambda: StageProgress.objects.create(job=job, stage="intents"))
    assert violates(lambda: StageProgress.objects.create(job=job, stage="painting"))
    Discard.objects.create(job=job, stage="apis", key="apis/0", reason="invalid_json")
    assert violates(lambda: Discard.objects.create(job=job, stage="apis", key="apis/0", reason="again"))
    assert violates(lambda: LLMCall.objects.create(stage="apis", model="m", prompt_hash="h", outcome="meh"))


ALL_MOVES = [(a, b) for a in JobStatus.values for b in JobStatus.values]


@pytest.mark.parametrize("start,end", ALL_MOVES)
def test_transition_table(start, end):
    job = GenerationJob(status=start)
    if end in JOB_TRANSITIONS[start]:
        job.transition(end)
        assert job.status == end
        assert (job.finished_at is not None) == job.is_terminal
    else:
        with pytest.raises(IllegalTransition):
            job.transition(end)
        assert job.status == start


def test_transition_saved_rows_satisfy_constraint():
    job = GenerationJob.objects.create()
    for status in ("running", "cancelling", "cancelled"):
        job.transition(status)
        job.save()
    job.refresh_from_db()
    assert job.status == "cancelled" and job.started_at and job.finished_at


def test_review_constraints(annotator_a, adjudicator):
    item = ReviewItem.objects.create(stage="flowgraph", object_id=1)
    assert violates(lambda: ReviewItem.objects.create(stage="flowgraph", object_id=1))
    assert violates(lambda: ReviewItem.objects.create(stage="poem", object_id=2))
    assert violates(lambda: ReviewItem.objects.create(stage="flowgraph", object_id=3, required_reviews=0))
    assert violates(lambda: ReviewItem.objects.create(stage="flowgraph", object_id=4, state="decided"))
    assert violates(lambda: ReviewItem.objects.create(stage="flowgraph", object_id=5, decision="accept"))
    assert not violates(lambda: ReviewItem.objects.create(stage="flowgraph", object_id=6, state="decided", decision="reject", decided_at=timezone.now()))
    Review.objects.create(item=item, annotator=annotator_a, verdict="accept")
    assert violates(lambda: Review.objects.create(item=item, annotator=annotator_a, verdict="reject"))
    assert violates(lambda: Review.objects.create(item=ReviewItem.objects.create(stage="conversation", object_id=9), annotator=annotator_a, verdict="maybe"))
    Claim.objects.create(item=item, annotator=annotator_a, expires_at=timezone.now() + timedelta(minutes=30))
    assert violates(lambda: Claim.objects.create(item=item, annotator=annotator_a, expires_at=timezone.now() + timedelta(minutes=30)))
    assert violates(lambda: Resolution.objects.create(item=item, adjudicator=adjudicator, decision="accept", note=""))
    assert violates(lambda: Resolution.objects.create(item=item, adjudicator=adjudicator, decision="perhaps", note="n"))
    Resolution.objects.create(item=item, adjudicator=adjudicator, decision="accept", note="ok")
    assert violates(lambda: Resolution.objects.create(item=item, adjudicator=adjudicator, decision="reject", note="again"))


def test_release_and_evaluation_constraints(researcher):
    Release.objects.create(name="almita", version=1, content_hash="x", created_by=researcher)
    assert violates(lambda: Release.objects.create(name="almita", version=1, content_hash="y"))
    assert violates(lambda: Release.objects.create(name="almita", version=2, kind="handmade", content_hash="y"))
    assert violates(lambda: Agent.objects.create(name="a", mode="telepathy"))
    assert violates(lambda: Agent.objects.create(name="b", temperature=3))
    agent = Agent.objects.create(name="gold", mode="gold")
    assert violates(lambda: Agent.objects.create(name="gold"))
    release = Release.objects.get(version=1)
    assert violates(lambda: EvaluationRun.objects.create(agent=agent, release=release, status="sleeping"))
    run = EvaluationRun.objects.create(agent=agent, release=release)
    from curation.models import ReleaseTest
    entry = ReleaseTest.objects.create(release=release, test_id=1, conversation_id=1, position=1, data={})
    TestResult.objects.create(run=run, entry=entry)
    assert violates(lambda: TestResult.objects.create(run=run, entry=entry))

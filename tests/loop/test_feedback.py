"""Regenerate with feedback against the fake OpenAI server: the reviewers' reasons reach the prompt,
and the prompt version and the feedback text are recorded on the job and every call."""
import pytest
from django.core.management import CommandError, call_command

from curation.loop.feedback import FeedbackError, feedback_for, regenerate_with_feedback
from curation.models import ReviewStage
from generation import services
from generation.models import Conversation, ConversationGraph, LLMCall
from tests.fake_openai import point_settings_at, prompt_text
from tests.generation.scripts import StageScript, import_document

from .helpers import decide, item_of

COMMENT = "The agent never asks for the card number <b>twice</b>"


@pytest.mark.django_db
def test_rejection_reasons_reach_the_regeneration_prompt(settings, fake_openai, annotator_a, annotator_b):
    point_settings_at(settings, fake_openai)
    fake_openai.set_handler(StageScript())
    job = services.job_run_inline(job=services.job_create(
        config={"paths": 2, "conversation_graph": "llm", "conversations": "llm"}, import_data=import_document(1),
        enqueue=False))
    assert job.status == "succeeded", job.error
    cg = ConversationGraph.objects.filter(job=job, paths__isnull=False).distinct().get()
    convs = list(Conversation.objects.filter(path__conversation_graph=cg).order_by("pk"))
    with pytest.raises(FeedbackError, match="no child"):
        regenerate_with_feedback(parent="conversation_graph", parent_id=cg.pk, enqueue=False)
    decide(item_of(ReviewStage.CONVERSATION, convs[0]), [annotator_a], "reject", ["CV-OFF-PATH"], comment=COMMENT)
    decide(item_of(ReviewStage.CONVERSATION, convs[0]), [annotator_b], "reject", ["CV-OFF-PATH", "OTHER"],
           comment="Wrong loan id")
    fb = feedback_for(parent="conversation_graph", parent_id=cg.pk)
    assert fb.rejected == [convs[0].pk] and fb.codes == {"CV-OFF-PATH": 2, "OTHER": 1}
    assert fb.comments == [COMMENT, "Wrong loan id"]

    seen = len(fake_openai.requests)
    regen, fb = regenerate_with_feedback(parent="conversation_graph", parent_id=cg.pk, enqueue=False)
    regen = services.job_run_inline(job=regen)
    assert regen.status == "succeeded", regen.error
    prompts = [prompt_text(b) for b in fake_openai.requests[seen:]]
    assert len(prompts) == 1  # one rejected conversation, one A.6 call
    assert "CV-OFF-PATH (2x): The conversation does not follow the highlighted path." in prompts[0]
    assert COMMENT in prompts[0] and "Wrong loan id" in prompts[0]
    assert regen.config["feedback"]["text"] == fb.text and regen.config["feedback"]["rejected"] == [convs[0].pk]
    calls = list(LLMCall.objects.filter(job=regen))
    assert calls and all(c.template == "A.6" and c.template_version == "v1+feedback" for c in calls)
    assert all(fb.text in c.request["messages"][-1]["content"] for c in calls)
    new = Conversation.objects.get(job=regen)
    assert new.path_id == convs[0].path_id  # the same path, written again
    assert set(LLMCall.objects.filter(job=job).values_list("template_version", flat=True)) == {"v1"}


@pytest.mark.django_db
def test_regenerate_command_errors(settings):
    settings.OPENAI_BASE_URL = ""
    with pytest.raises(CommandError, match="no child of conversation_graph 5"):
        call_command("regenerate", "--graph", "5")


@pytest.mark.django_db
def test_feedback_page_and_api(client, settings, fake_openai, admin_user, annotator_a, annotator_b, researcher):
    from django.urls import reverse

    from generation.models import GenerationJob

    from .helpers import build_graph_with_conversations

    point_settings_at(settings, fake_openai)
    cg = build_graph_with_conversations()
    conv = Conversation.objects.filter(path__conversation_graph=cg).first()
    decide(item_of(ReviewStage.CONVERSATION, conv), [annotator_a, annotator_b], "reject", ["OTHER"],
           comment='<script>alert("x")</script>')
    url = reverse("curation:feedback", args=["conversation_graph", cg.pk])
    assert client.get(url).status_code == 302  # anonymous → login
    client.force_login(researcher)
    assert client.get(url).status_code == 403
    client.force_login(admin_user)
    page = client.get(url).content.decode()
    assert "Regenerate with feedback" in page and "&lt;script&gt;" in page and "<script>alert" not in page
    assert client.get(reverse("curation:feedback", args=["intent", 1])).status_code == 404
    assert client.put(url).status_code == 405
    r = client.post(url)
    job = GenerationJob.objects.get()
    assert r.status_code == 302 and job.config["feedback"]["rejected"] == [conv.pk]
    r = client.post(reverse("api:regenerate"), {"parent": "conversation_graph", "id": cg.pk},
                    content_type="application/json")
    assert r.status_code == 201 and "OTHER" in r.json()["feedback"]["codes"]
    r = client.post(reverse("api:regenerate"), {"parent": "flowgraph", "id": cg.flowgraph_id},
                    content_type="application/json")
    assert r.status_code == 400 and "no child of flowgraph" in r.json()["detail"]

"""Structured outputs (#32 item 3): the stage's JSON Schema as response_format where the endpoint
takes it, learnt once per endpoint and model, the prompt-only form where it does not; each call
records the form used and the analytics slice by it. All against the real local fake server."""
from __future__ import annotations

import json

import pytest

from curation.agreement.analytics import stage_analytics
from curation.models import ReviewStage
from generation import llm
from generation.llm import capabilities
from generation.models import Conversation, EndpointCapability, GenerationJob, LLMBatch, LLMCall
from generation.stages.schemas import CONVERSATION, SCHEMAS, schema_for
from tests.fake_openai import FakeOpenAI, Reply, point_settings_at
from tests.fake_schema import conforms
from tests.generation.scripts import APIS, conversation_for, intents_reply

pytestmark = pytest.mark.django_db
MSG = [{"role": "user", "content": "Write the conversation."}]
GOOD = json.dumps({"messages": [{"role": "user", "content": "hi"}]})


def _ask(**kw):
    return llm.chat(stage="conversations", messages=MSG, model="m1", response_format={"type": "json_object"},
                    schema=schema_for("A.6"), key="k", **kw)


def test_schemas_describe_what_the_scripted_valid_replies_are():
    # The valid replies of the suite's stage script conform; the shapes the stages reject do not.
    assert conforms(json.loads(intents_reply(3)), SCHEMAS["A.1"][1])
    assert conforms(APIS, SCHEMAS["A.3"][1])
    body = {"messages": [{"role": "user", "content": "path: [N0]"}]}
    assert conforms(json.loads(conversation_for(body)), CONVERSATION)
    assert not conforms({"answer": 42}, CONVERSATION)
    assert not conforms({"messages": [{"role": "robot", "content": "x"}]}, CONVERSATION)
    assert schema_for("A.2") is None  # procedures are text: no schema


def test_accepted_schema_is_sent_recorded_and_remembered(settings):
    with FakeOpenAI(lambda body, n: Reply(content=GOOD), structured_outputs="accept") as fake:
        point_settings_at(settings, fake, LLM_CACHE=False)
        assert capabilities.structured_outputs(fake.base_url, "m1") is None
        _ask()
        sent = fake.requests[0]["response_format"]
        assert sent["type"] == "json_schema" and sent["json_schema"]["schema"] == CONVERSATION
        assert sent["json_schema"]["strict"] is True
        assert LLMCall.objects.get().output_form == "schema"
        assert capabilities.structured_outputs(fake.base_url, "m1") is True
        # A text call (no schema) stays free text.
        llm.chat(stage="procedures", messages=MSG, model="m1")
        assert "response_format" not in fake.requests[1] and LLMCall.objects.last().output_form == "text"


def test_refused_schema_falls_back_once_and_is_remembered(settings):
    with FakeOpenAI(lambda body, n: Reply(content=GOOD), structured_outputs="refuse") as fake:
        point_settings_at(settings, fake, LLM_CACHE=False)
        result = _ask()
        assert result.content == GOOD
        first, second = fake.requests
        assert first["response_format"]["type"] == "json_schema"
        assert second["response_format"] == {"type": "json_object"}  # the prompt-only form
        refused, answered = LLMCall.objects.order_by("id")
        assert refused.outcome == "retried" and refused.status_code == 400 and refused.output_form == "schema"
        assert "structured outputs refused" in refused.error
        assert answered.outcome == "ok" and answered.output_form == "json"
        assert EndpointCapability.objects.get().structured_outputs is False
        # Remembered: the next call goes out in the prompt-only form at once (one request, not two).
        _ask()
        assert len(fake.requests) == 3 and fake.requests[2]["response_format"] == {"type": "json_object"}
        # Per endpoint and model: another model on the same endpoint is tried with its schema.
        llm.chat(stage="conversations", messages=MSG, model="m2", response_format={"type": "json_object"},
                 schema=schema_for("A.6"))
        assert fake.requests[3]["response_format"]["type"] == "json_schema"


def test_switched_off_sends_the_prompt_only_form(settings):
    with FakeOpenAI(lambda body, n: Reply(content=GOOD)) as fake:
        point_settings_at(settings, fake, LLM_CACHE=False, LLM_STRUCTURED_OUTPUTS=False)
        _ask()
        assert fake.requests[0]["response_format"] == {"type": "json_object"}
        assert LLMCall.objects.get().output_form == "json" and not EndpointCapability.objects.exists()


def test_honouring_endpoint_never_returns_a_non_conforming_reply(settings):
    # The handler answers wrong-shape JSON every other time; with the schema the fake redraws it
    # (as constrained decoding would never emit it), without it the wrong shape comes through.
    replies = iter([Reply.wrong_shape(), Reply(content=GOOD)] * 10)
    with FakeOpenAI(lambda body, n: next(replies), structured_outputs="honour") as fake:
        point_settings_at(settings, fake, LLM_CACHE=False)
        assert _ask().content == GOOD
        point_settings_at(settings, fake, LLM_CACHE=False, LLM_STRUCTURED_OUTPUTS=False)
        assert json.loads(_ask().content) == {"answer": 42, "note": "not what was asked"}


def test_analytics_slice_by_output_form_and_channel(annotator_a, annotator_b):
    from tests.loop.helpers import build_graph_with_conversations, decide, item_of

    cg = build_graph_with_conversations(n=3)
    convs = list(Conversation.objects.filter(path__conversation_graph=cg).order_by("pk"))
    job = GenerationJob.objects.create(name="forms", config={})
    batch = LLMBatch.objects.create(job=job, endpoint="http://x/v1", remote_id="b1")
    for i, (c, form) in enumerate(zip(convs, ["schema", "json", "schema"])):
        Conversation.objects.filter(pk=c.pk).update(job=job, key=f"conversations:{i}:1", mode="llm")
        LLMCall.objects.create(job=job, stage="conversations", key=f"conversations:{i}:1", model="m",
                               prompt_hash=f"h{i}", output_form=form, batch=batch if i == 2 else None)
    decide(item_of(ReviewStage.CONVERSATION, convs[0]), [annotator_a, annotator_b])
    decide(item_of(ReviewStage.CONVERSATION, convs[1]), [annotator_a, annotator_b], "reject", ["CV-OFF-PATH"])
    decide(item_of(ReviewStage.CONVERSATION, convs[2]), [annotator_a, annotator_b], "reject", ["CV-OFF-PATH"])
    data = stage_analytics(ReviewStage.CONVERSATION)
    forms = {r["value"]: (r["items"], r["acceptance"]) for r in data["output_form"]}
    assert forms == {"schema": (2, 0.5), "json": (1, 0.0)}
    channels = {r["value"]: r["items"] for r in data["channel"]}
    assert channels == {"online": 2, "batch": 1}

"""Issue #28 item 3: the LLM path's conversations are audited before review; a conversation that
fails the audit (here: the chart's scaffolding in an assistant turn, which no validator before the
audit looked at) goes through the
repair loop with the findings, and only the repaired one is kept."""
from __future__ import annotations

import json

import pytest

from generation import services
from generation.models import Conversation, LLMCall
from generation.pipeline.audit import audit_conversation
from generation.stages.base import api_specs
from tests.fake_openai import Reply, point_settings_at
from tests.generation.scripts import APIS, FLOWGRAPH, MARKERS, conversation_for


def _doc() -> dict:
    return {"procedures": [{"intent": {"client": "library", "issue": "renewal", "name": "renew"}, "title": "Renew",
                            "text": "Renew a library loan.", "apis": APIS, "flowgraph": FLOWGRAPH}]}


def scaffolded_first(body: dict, n: int) -> Reply:
    text = json.dumps(body["messages"])
    if MARKERS["conversations"] not in text:
        return Reply.client_error(404, "only conversations are scripted")
    good = json.loads(conversation_for(body))
    if "did not pass the automatic checks" in text:
        return Reply(content=json.dumps(good))
    bad = [dict(m) for m in good["messages"]]
    bad[-1]["content"] = "Let me subgoal: tell the user the loan_id."
    return Reply(content=json.dumps({"messages": bad}))


@pytest.mark.django_db
def test_a_conversation_failing_the_audit_is_repaired_with_its_findings(settings, fake_openai):
    point_settings_at(settings, fake_openai)
    fake_openai.set_handler(scaffolded_first)
    job = services.job_run_inline(job=services.job_create(config={"paths": 2, "conversations": "llm"},
                                                          import_data=_doc(), enqueue=False))
    assert job.status == "succeeded"
    convs = list(Conversation.objects.filter(job=job))
    assert convs and all(c.mode == Conversation.Mode.LLM for c in convs)
    for c in convs:  # what reached review passes the audit
        assert audit_conversation(c.messages, api_specs(c.procedure_id), None, None) == []
        assert not any(w["rule"].startswith("AUDIT-") for w in c.validation)
    failed = LLMCall.objects.filter(job=job, stage="conversations", validated=False)
    rules = {r for call in failed for r in call.rules}
    assert rules == {"AUDIT-SPEECH"}, rules
    repaired = LLMCall.objects.filter(job=job, stage="conversations", validated=True, repair__gte=1)
    assert repaired.count() == len(convs)
    # the repair turn listed the findings to the model
    assert any("AUDIT-SPEECH" in json.dumps(call.request) for call in repaired)

"""The optional LLM outcome check: off by default, recorded like every call, findings become warnings."""
from __future__ import annotations

import json

import pytest

from generation import services
from generation.models import Conversation, LLMCall
from generation.outcome_check import parse_findings
from generation.pipeline.consistency import ApiTurn
from tests.fake_openai import Reply, point_settings_at
from tests.generation.scripts import APIS, FLOWGRAPH


def _doc() -> dict:
    return {"procedures": [{"intent": {"client": "library", "issue": "renewal", "name": "renew"}, "title": "Renew",
                            "text": "Renew a library loan.", "apis": APIS, "flowgraph": FLOWGRAPH}]}


def judge_everything_inconsistent(body: dict, n: int) -> Reply:
    text = json.dumps(body["messages"])
    if "Branch taken next" not in text:
        return Reply.client_error(404, "only the outcome check is scripted")
    calls = text.count("Call ")
    return Reply(content=json.dumps({"findings": [{"call": i, "consistent": False, "reason": "says found"}
                                                  for i in range(1, calls + 1)]}))


@pytest.mark.django_db
def test_llm_check_runs_only_when_enabled_and_its_findings_are_warnings(settings, fake_openai):
    point_settings_at(settings, fake_openai)
    fake_openai.set_handler(judge_everything_inconsistent)
    off = services.job_run_inline(job=services.job_create(config={"paths": 2}, import_data=_doc(), enqueue=False))
    assert off.status == "succeeded" and fake_openai.request_count == 0
    on = services.job_run_inline(job=services.job_create(config={"paths": 2, "outcome_check": "llm"},
                                                         import_data=_doc(), enqueue=False))
    assert on.status == "succeeded" and fake_openai.request_count > 0
    calls = LLMCall.objects.filter(job=on)
    assert calls.exists() and set(calls.values_list("template", "template_version")) == {("OC.1", "v1")}
    warned = [w for c in Conversation.objects.filter(job=on) for w in c.validation if w["rule"] == "CV-OUTCOME-LLM"]
    assert warned and all(w["severity"] == "warning" and "find_loan" in w["message"] for w in warned)
    assert Conversation.objects.filter(job=on).count() == Conversation.objects.filter(job=off).count()


def test_unreadable_or_partial_replies():
    turn = ApiTurn(1, None, "find_loan(card_number=5)", {"loan_id": 3}, "Loan found")
    assert parse_findings("not json", [turn])[0].rule == "CV-OUTCOME-LLM"
    assert parse_findings('{"findings": [{"call": 1, "consistent": true}]}', [turn]) == []
    assert parse_findings('{"findings": [{"call": 9, "consistent": false}]}', [turn]) == []

"""Multi-API generation: a job seeded from API chains of the compatibility graph, against the
suite's fake OpenAI server; the A.2 and A.3 prompts receive the chain."""
from __future__ import annotations

import pytest

from generation import multi_api, services
from generation.models import Procedure
from generation.pipeline import api_graph as G
from generation.services import JobConfigError
from tests.fake_openai import point_settings_at, prompt_text
from tests.generation.scripts import JOB_CONFIG, StageScript

CHAIN_APIS = [
    {"name": "find_user_id_by_email", "description": "Find a user id by email.",
     "parameters": {"type": "object", "properties": {"email": {"type": "string", "description": "The email"}}},
     "returns": {"type": "string", "title": "user_id", "description": "The user id."}},
    {"name": "get_user_details", "description": "Get the details of a user.",
     "parameters": {"type": "object", "properties": {"user_id": {"type": "string", "description": "The user id"}}},
     "returns": {"python_type": "User", "description": "User: The user details."}},
    {"name": "transfer_to_human_agents", "description": "Transfer the user to a human agent.",
     "parameters": {"type": "object", "properties": {"summary": {"type": "string"}}},
     "returns": {"python_type": "str", "description": "A message."}},
]


def test_chains_from_apis_pure():
    chains = multi_api.chains_from_apis(G.load_apis(CHAIN_APIS), length=2, count=5)
    assert [[a["name"] for a in c["apis"]] for c in chains] == [["find_user_id_by_email", "get_user_details"]]
    assert chains[0]["links"] == [{"from": "find_user_id_by_email", "to": "get_user_details",
                                   "fields": [["user_id", "user_id"]]}]
    assert chains[0]["apis"][1]["params"][0]["name"] == "user_id"


@pytest.mark.django_db
def test_a_job_seeded_from_an_api_chain(settings, fake_openai):
    point_settings_at(settings, fake_openai)
    seen = []
    script = StageScript()

    def handler(body, n):
        seen.append(prompt_text(body))
        return script(body, n)

    fake_openai.set_handler(handler)
    config = {**JOB_CONFIG, "intents": 1, "procedures_per_intent": 1,
              "api_chains": {"apis": CHAIN_APIS, "length": 2, "count": 3}}
    job = services.job_create(config=config, enqueue=False)
    frozen = job.config["api_chains"]["chains"]
    assert [a["name"] for a in frozen[0]["apis"]] == ["find_user_id_by_email", "get_user_details"]
    job = services.job_run_inline(job=job)
    procedure = Procedure.objects.get(job=job)
    assert procedure.api_chain == frozen[0]
    a2 = [t for t in seen if "must use these APIs, in this order" in t]
    a3 = [t for t in seen if "use them exactly" in t]
    assert len(a2) == 1 and len(a3) == 1
    assert "its output user_id gives the input user_id" in a2[0]
    assert '"name": "get_user_details"' in a3[0]
    assert not any("transfer_to_human_agents" in t for t in a2 + a3)


@pytest.mark.django_db
def test_bad_chain_settings_are_refused():
    with pytest.raises(JobConfigError, match="no chain of 2 connected APIs"):
        services.job_create(config={**JOB_CONFIG, "api_chains": {"apis": CHAIN_APIS[2:]}}, enqueue=False)
    with pytest.raises(JobConfigError, match="api_chains.apis: item 0"):
        services.job_create(config={**JOB_CONFIG, "api_chains": {"apis": [{"params": []}]}}, enqueue=False)
    with pytest.raises(JobConfigError, match="length 2-4"):
        services.job_create(config={**JOB_CONFIG, "api_chains": {"apis": CHAIN_APIS, "length": 9}}, enqueue=False)

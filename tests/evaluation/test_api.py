"""The evaluation REST API: roles on every route, launching a run, re-judging, cancel and resume,
clear refusals, and the routes in the OpenAPI schema."""
from __future__ import annotations

import json

import pytest
from django.db import transaction
from rest_framework.test import APIClient

from evaluation import services
from evaluation.models import EvaluationRun, RunStatus

pytestmark = pytest.mark.django_db
PERSONAS = ["annotator", "adjudicator", "researcher", "admin", "outsider", "anonymous"]
ALLOWED = {"researcher", "admin"}


def client_for(personas, who: str) -> APIClient:
    c = APIClient()
    if who != "anonymous":
        c.force_authenticate(personas[who])
    return c


def status_for(who: str, ok: int) -> int:
    return 401 if who == "anonymous" else ok if who in ALLOWED else 403


@pytest.fixture
def gold(db):
    return services.reference_agents_ensure()[0]


@pytest.mark.parametrize("who", PERSONAS)
def test_every_route_checks_the_role(personas, small_release, gold, who, django_capture_on_commit_callbacks):
    done = services.run_execute_inline(run=services.run_create(agent=gold, release=small_release,
                                                               similarity="lexical", start=False), workers=1)
    c = client_for(personas, who)
    assert c.get("/api/agents/").status_code == status_for(who, 200)
    assert c.get(f"/api/evaluation-runs/{done.pk}/").status_code == status_for(who, 200)
    with django_capture_on_commit_callbacks(execute=False):
        r = c.post("/api/evaluation-runs/", {"agent": gold.pk, "release": small_release.pk,
                                             "similarity": "lexical"}, format="json")
        assert r.status_code == status_for(who, 201), r.content
        r = c.post(f"/api/evaluation-runs/{done.pk}/rejudge/", {"similarity": "lexical", "threshold": 0.9},
                   format="json")
        assert r.status_code == status_for(who, 201), r.content
    created = EvaluationRun.objects.exclude(pk=done.pk)
    assert created.count() == (2 if who in ALLOWED else 0)  # a refused call leaves nothing behind
    for verb in ("cancel", "resume"):
        r = c.post(f"/api/evaluation-runs/{done.pk}/{verb}/")
        assert r.status_code == status_for(who, 409), (verb, r.content)  # a succeeded run moves nowhere


def test_launch_rejudge_cancel_resume(personas, small_release, gold, django_capture_on_commit_callbacks):
    c = client_for(personas, "researcher")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        r = c.post("/api/evaluation-runs/", {"agent": gold.pk, "release": small_release.pk, "similarity": "lexical",
                                             "concurrency": 2}, format="json")
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["status"] == "running" and body["total"] == 10 and body["concurrency"] == 2
    assert body["agent"] == gold.name and len(callbacks) == 1
    run = EvaluationRun.objects.get(pk=body["id"])
    assert run.created_by == personas["researcher"]
    # a running run cannot be re-judged yet
    r = c.post(f"/api/evaluation-runs/{run.pk}/rejudge/", {}, format="json")
    assert r.status_code == 400 and "only a succeeded run" in r.json()["detail"]
    assert c.post(f"/api/evaluation-runs/{run.pk}/cancel/").json()["status"] == "cancelled"
    assert c.post(f"/api/evaluation-runs/{run.pk}/cancel/").status_code == 409
    with django_capture_on_commit_callbacks(execute=False):
        assert c.post(f"/api/evaluation-runs/{run.pk}/resume/").json()["status"] == "running"
    run = services.run_execute_inline(run=run, workers=1)
    assert run.status == RunStatus.SUCCEEDED
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        r = c.post(f"/api/evaluation-runs/{run.pk}/rejudge/", {"similarity": "lexical", "threshold": 0.7},
                   format="json")
    assert r.status_code == 201 and r.json()["rejudged_from"] == run.pk and r.json()["threshold"] == 0.7
    assert len(callbacks) == 1
    listed = c.get(f"/api/evaluation-runs/?rejudged_from={run.pk}").json()["results"]
    assert [x["id"] for x in listed] == [r.json()["id"]]


def test_bad_requests_are_refused_with_the_field_named(personas, small_release, gold, settings):
    c = client_for(personas, "researcher")
    r = c.post("/api/evaluation-runs/", {"agent": gold.pk, "release": small_release.pk, "threshold": 1.5},
               format="json")
    assert r.status_code == 400 and "threshold" in r.json()
    r = c.post("/api/evaluation-runs/", {"agent": 999, "release": small_release.pk}, format="json")
    assert r.status_code == 400 and "agent" in r.json()
    r = c.post("/api/evaluation-runs/", {"agent": gold.pk, "release": small_release.pk, "similarity": "cosine"},
               format="json")
    assert r.status_code == 400 and "similarity" in r.json()
    settings.OPENAI_BASE_URL = ""
    llm = services.agent_create(name="remote", model="m")
    r = c.post("/api/evaluation-runs/", {"agent": llm.pk, "release": small_release.pk, "similarity": "lexical"},
               format="json")
    assert r.status_code == 400 and "no LLM endpoint" in r.json()["detail"]
    assert not EvaluationRun.objects.exists()


def test_agents_list_names_the_key_variable_never_a_key(personas, monkeypatch, db):
    monkeypatch.setenv("MY_AGENT_API_KEY", "sk-very-secret-value")
    services.agent_create(name="custom", model="m", api_key_env="MY_AGENT_API_KEY", base_url="http://127.0.0.1:9/v1")
    body = client_for(personas, "researcher").get("/api/agents/?page_size=50").content.decode()
    assert "MY_AGENT_API_KEY" in body and "sk-very-secret-value" not in body
    assert "Reference: gold" in body


def test_schema_documents_the_evaluation_routes(personas, db):
    schema = client_for(personas, "researcher").get("/api/schema/?format=json").json()
    for path in ("/api/evaluation-runs/", "/api/evaluation-runs/{id}/rejudge/", "/api/evaluation-runs/{id}/cancel/",
                 "/api/evaluation-runs/{id}/resume/", "/api/evaluation-runs/{id}/results/", "/api/agents/"):
        assert path in schema["paths"], path
    assert "post" in schema["paths"]["/api/evaluation-runs/"]
    results = schema["paths"]["/api/evaluation-runs/{id}/results/"]["get"]["responses"]["200"]
    assert "trial" in json.dumps(results) or "Result" in json.dumps(results)

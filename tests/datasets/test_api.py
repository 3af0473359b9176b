"""REST API: the permission matrix for every role and anonymous, filters, pagination, blind-safe
reviews, job launch, releases over the API, token auth, schema and docs."""
from __future__ import annotations

import json

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from curation.models import ItemState, Review, ReviewItem, ReviewStage, Verdict
from curation.releases.services import release_create
from generation.models import Conversation, GenerationJob, Intent, Test
from tests.datasets.conftest import accept_all

PERSONAS = ["annotator", "adjudicator", "researcher", "admin", "outsider", "anonymous"]
ARTIFACTS = ["intents", "procedures", "apis", "flowgraphs", "conversation-graphs", "paths", "conversations",
             "tests", "jobs"]
READERS = {"researcher", "admin"}
ANY_ROLE = {"annotator", "adjudicator", "researcher", "admin"}


def client_for(personas, who: str) -> APIClient:
    c = APIClient()
    if who != "anonymous":
        c.force_authenticate(personas[who])
    return c


def expected(who: str, allowed: set[str], ok: int = 200) -> int:
    if who == "anonymous":
        return 401
    return ok if who in allowed else 403


MATRIX = (
    [(f"/api/{name}/", READERS) for name in ARTIFACTS]
    + [("/api/releases/", READERS), ("/api/evaluation-runs/", READERS), ("/api/reviews/", ANY_ROLE),
       ("/api/schema/", ANY_ROLE), ("/api/", ANY_ROLE)]
)


@pytest.mark.django_db
@pytest.mark.parametrize("who", PERSONAS)
def test_read_permission_matrix(personas, imported, who):
    c = client_for(personas, who)
    for url, allowed in MATRIX:
        r = c.get(url)
        assert r.status_code == expected(who, allowed), (url, who, r.status_code)
    # Detail pages follow the same rule.
    intent = Intent.objects.first()
    assert c.get(f"/api/intents/{intent.pk}/").status_code == expected(who, READERS)


@pytest.mark.django_db
@pytest.mark.parametrize("who", PERSONAS)
def test_write_permission_matrix(personas, imported, who, settings):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"  # never called: the job is not run in this test
    c = client_for(personas, who)
    r = c.post("/api/jobs/", {"name": "api job", "config": {"intents": 2}}, format="json")
    assert r.status_code == expected(who, {"admin"}, 201), r.content
    accept_all()
    r = c.post("/api/releases/", {"name": "via api", "kind": "curated"}, format="json")
    assert r.status_code == expected(who, READERS, 201), r.content


@pytest.mark.django_db
@pytest.mark.parametrize("who", PERSONAS)
def test_docs_page_permissions(client, personas, who):
    if who != "anonymous":
        client.force_login(personas[who])
    r = client.get("/api/docs/", HTTP_ACCEPT="text/html")
    if who == "anonymous":
        assert r.status_code == 302 and "/login/" in r["Location"]
    else:
        assert r.status_code == (200 if who in ANY_ROLE else 403)
    if r.status_code == 200:
        assert b"/api/releases/{id}/download/{file}/" in r.content and b"Token" in r.content


@pytest.mark.django_db
def test_wrong_methods_are_refused(personas, imported):
    c = client_for(personas, "admin")
    intent = Intent.objects.first()
    assert c.put(f"/api/intents/{intent.pk}/", {}, format="json").status_code == 405
    assert c.delete(f"/api/intents/{intent.pk}/").status_code == 405
    assert c.post("/api/tests/", {}, format="json").status_code == 405
    assert c.post("/api/reviews/", {}, format="json").status_code == 405
    release = release_create(name="r", kind="automatic", filters={}, created_by=personas["admin"])
    assert c.delete(f"/api/releases/{release.pk}/").status_code == 405
    assert c.patch(f"/api/releases/{release.pk}/", {"name": "x"}, format="json").status_code == 405


@pytest.mark.django_db
def test_filters_and_pagination(personas, imported):
    c = client_for(personas, "researcher")
    intent = Intent.objects.order_by("pk").first()
    r = c.get("/api/conversations/", {"intent": intent.pk, "page_size": 2})
    assert r.status_code == 200
    body = r.json()
    assert body["count"] == Conversation.objects.filter(procedure__intent=intent).count() == 3
    assert len(body["results"]) == 2 and body["next"]
    r = c.get("/api/tests/", {"expected_type": "api_call"})
    assert r.json()["count"] == Test.objects.filter(expected_type="api_call").count()
    assert all(t["expected"]["type"] == "api_call" for t in r.json()["results"])
    assert c.get("/api/tests/", {"conversation": "abc"}).status_code == 400
    proc = c.get("/api/procedures/").json()["results"][0]
    assert [a["name"] for a in proc["apis"]] == ["track_parcel", "open_claim"]


@pytest.mark.django_db
def test_reviews_are_only_the_callers_own(personas, imported):
    conv = Conversation.objects.first()
    item = ReviewItem.objects.create(stage=ReviewStage.CONVERSATION, object_id=conv.pk, review_count=2,
                                     state=ItemState.DISAGREEMENT)
    mine = Review.objects.create(item=item, annotator=personas["annotator"], verdict=Verdict.ACCEPT)
    Review.objects.create(item=item, annotator=personas["annotator_b"], verdict=Verdict.REJECT)
    r = client_for(personas, "annotator").get("/api/reviews/")
    assert [x["id"] for x in r.json()["results"]] == [mine.pk]
    assert client_for(personas, "annotator").get(f"/api/reviews/{mine.pk + 1}/").status_code == 404
    assert client_for(personas, "adjudicator").get("/api/reviews/").json()["count"] == 0
    assert client_for(personas, "admin").get("/api/reviews/").json()["count"] == 2


@pytest.mark.django_db
def test_job_launch_and_status(personas, settings):
    c = client_for(personas, "admin")
    r = c.post("/api/jobs/", {"name": "no endpoint", "config": {"intents": 1}}, format="json")
    if settings.OPENAI_BASE_URL:
        assert r.status_code == 201
    else:
        assert r.status_code == 400 and "endpoint" in r.json()["detail"].lower()
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    r = c.post("/api/jobs/", {"name": "api job", "config": {"intents": 1, "paths": 3}}, format="json")
    assert r.status_code == 201
    job = GenerationJob.objects.get(pk=r.json()["id"])
    assert job.created_by == personas["admin"] and job.config["paths"] == 3
    status = c.get(f"/api/jobs/{job.pk}/").json()
    assert status["status"] == "queued" and status["progress"]
    assert c.post("/api/jobs/", {"config": {"paths": 0, "intents": 1}}, format="json").status_code == 400


@pytest.mark.django_db
def test_release_create_list_and_download_over_the_api_with_a_token(personas, imported):
    accept_all()
    token = Token.objects.create(user=personas["researcher"])
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    r = c.post("/api/releases/", {"name": "api", "kind": "curated", "filters": {"noise_kinds": ["none"]}},
               format="json")
    assert r.status_code == 201, r.content
    rel = r.json()
    assert rel["version"] == 1 and rel["content_hash"] and rel["manifest"]["counts"]["tests"] > 0
    assert c.get("/api/releases/", {"name": "api"}).json()["count"] == 1
    r = c.get(rel["downloads"]["tests.jsonl"])
    assert r.status_code == 200 and r.streaming
    lines = b"".join(r.streaming_content).decode().splitlines()
    assert len(lines) == rel["manifest"]["counts"]["tests"]
    assert all(json.loads(line)["noise_kinds"] == [] for line in lines)
    assert c.get(f"/api/releases/{rel['id']}/download/nope.txt/").status_code == 404
    bad = c.post("/api/releases/", {"name": "x", "filters": {"stages": ["nope"]}}, format="json")
    assert bad.status_code == 400 and "stage" in bad.json()["detail"]


@pytest.mark.django_db
def test_token_endpoint(personas):
    from tests.conftest import PASSWORD

    r = APIClient().post("/api/auth/token/", {"username": "researcher", "password": PASSWORD})
    assert r.status_code == 200
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {r.json()['token']}")
    assert c.get("/api/releases/").status_code == 200
    c.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert c.get("/api/releases/").status_code == 401


@pytest.mark.django_db
def test_schema_lists_every_endpoint(personas):
    r = client_for(personas, "researcher").get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert r.status_code == 200
    paths = json.loads(r.content)["paths"]
    for name in ARTIFACTS + ["releases", "reviews", "evaluation-runs"]:
        assert f"/api/{name}/" in paths
    assert "/api/releases/{id}/download/{file}/" in paths


@pytest.mark.django_db
def test_docs_and_schema_with_a_token_and_401_as_json(client, personas):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=personas["researcher"])
    auth = {"HTTP_AUTHORIZATION": f"Token {token.key}"}
    r = client.get("/api/docs/", **auth)
    assert r.status_code == 200 and b"/api/releases/" in r.content
    assert client.get("/api/schema/", **auth).status_code == 200
    for url in ("/api/docs/", "/api/schema/"):
        for headers in ({}, {"HTTP_AUTHORIZATION": "Token wrong"}):
            r = client.get(url, **headers)
            assert r.status_code == 401, (url, headers)
            assert r["Content-Type"].startswith("application/json") and "detail" in r.json()

"""Pages: the admins' import upload and the researchers' release list, create form and downloads."""
from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from curation.models import Release
from curation.releases.services import release_create
from generation.models import Intent, Procedure
from tests.datasets.builders import document
from tests.datasets.conftest import accept_all

UPLOAD = "/imports/"


def login(client, user):
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_import_page_happy_path(client, admin_user):
    login(client, admin_user)
    assert client.get(UPLOAD).status_code == 200
    doc = document(n_procedures=1, paths_per_graph=1)
    doc["records"][0]["name"] = "<script>alert('x')</script>"
    up = SimpleUploadedFile("doc.json", json.dumps(doc).encode(), content_type="application/json")
    r = client.post(UPLOAD, {"file": up, "format": "auto"}, follow=True)
    assert r.status_code == 200
    assert b"created 1 intents" in r.content
    assert Intent.objects.get().name.startswith("<script>")


@pytest.mark.django_db
def test_import_page_refuses_a_bad_file_whole_and_says_where(client, admin_user):
    login(client, admin_user)
    doc = document(n_procedures=1, paths_per_graph=1)
    doc["records"][-1]["messages"][0]["role"] = "<b>robot</b>"
    up = SimpleUploadedFile("bad.json", json.dumps(doc).encode())
    r = client.post(UPLOAD, {"file": up, "format": "almita"})
    assert r.status_code == 400
    assert b"Refused, nothing imported" in r.content and b"bad.json, record" in r.content and b"key &#x27;messages[0]&#x27;" in r.content
    assert Intent.objects.count() == 0


@pytest.mark.django_db
def test_import_page_api_list_with_procedure_file(client, admin_user):
    login(client, admin_user)
    tools = SimpleUploadedFile("tools.json", json.dumps([{"type": "function", "function": {
        "name": "lookup", "description": "Look up", "parameters": {"type": "object", "properties": {}}}}]).encode())
    wiki = SimpleUploadedFile("wiki.md", "Be kind. Look things up.".encode())
    r = client.post(UPLOAD, {"file": tools, "format": "openai_tools", "name": "shop", "procedure_file": wiki})
    assert r.status_code == 302
    assert Procedure.objects.get().text == "Be kind. Look things up."


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["annotator", "adjudicator", "researcher", "outsider"])
def test_import_page_is_for_admins_only(client, personas, who):
    login(client, personas[who])
    assert client.get(UPLOAD).status_code == 403
    assert client.post(UPLOAD, {}).status_code == 403


@pytest.mark.django_db
def test_import_page_anonymous_and_wrong_method(client, admin_user):
    r = client.get(UPLOAD)
    assert r.status_code == 302 and "/login/" in r["Location"]
    login(client, admin_user)
    assert client.put(UPLOAD).status_code == 405


@pytest.mark.django_db
def test_release_pages_happy_path(client, researcher, imported):
    accept_all()
    login(client, researcher)
    r = client.get(reverse("datasets:releases"))
    assert r.status_code == 200 and b"No releases yet" in r.content
    r = client.post(reverse("datasets:release_new"), {"name": "Web <release>", "kind": "curated",
                                                       "licence": "CC-BY-4.0", "noise_kinds": "none"})
    release = Release.objects.get()
    assert r.status_code == 302 and r["Location"] == reverse("datasets:release", args=[release.pk])
    assert release.filters == {"noise_kinds": ["none"]}
    page = client.get(reverse("datasets:releases")).content
    assert b"Web &lt;release&gt; v1" in page and b"Funnel (paper Table 1)" in page and b"hf.zip" in page
    detail = client.get(reverse("datasets:release", args=[release.pk]))
    assert detail.status_code == 200 and release.content_hash.encode() in detail.content
    csv = client.get(reverse("datasets:download", args=[release.pk, "tests.csv"]))
    assert csv.status_code == 200 and csv.streaming and csv["Content-Type"].startswith("text/csv")
    assert b"".join(csv.streaming_content).startswith(b"test_id,")
    assert client.get(reverse("datasets:download", args=[release.pk, "secrets.txt"])).status_code == 404


@pytest.mark.django_db
def test_release_form_errors_are_shown(client, researcher):
    login(client, researcher)
    r = client.post(reverse("datasets:release_new"), {"name": "", "kind": "curated", "licence": "CC-BY-4.0",
                                                       "jobs": "1, x"})
    assert r.status_code == 400 and b"is not an id" in r.content
    assert Release.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["annotator", "adjudicator", "outsider"])
def test_release_pages_wrong_role(client, personas, imported, who):
    release = release_create(name="r", kind="automatic", filters={}, created_by=personas["researcher"])
    login(client, personas[who])
    for url in (reverse("datasets:releases"), reverse("datasets:release", args=[release.pk]),
                reverse("datasets:download", args=[release.pk, "tests.jsonl"])):
        assert client.get(url).status_code == 403
    assert client.post(reverse("datasets:release_new"), {"name": "x"}).status_code == 403


@pytest.mark.django_db
def test_release_pages_anonymous_and_wrong_method(client, researcher):
    for url in (reverse("datasets:releases"), reverse("datasets:release_new")):
        r = client.get(url)
        assert r.status_code == 302 and "/login/" in r["Location"]
    login(client, researcher)
    assert client.post(reverse("datasets:releases")).status_code == 405
    assert client.get(reverse("datasets:release_new")).status_code == 405

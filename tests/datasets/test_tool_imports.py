"""Tool documents and FlowBench releases through import_items, the upload page and the REST import:
everything not kept is listed in the report of each, refusals are one short line, nothing is written."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from generation.imports import ImportFormatError, items_import
from generation.models import Api, Flowgraph, Procedure

PIPE = Path(__file__).resolve().parent.parent / "pipeline" / "fixtures"
TOOLS = PIPE / "tools"
ODDITIES = PIPE / "flowbench" / "oddities.jsonl"


@pytest.mark.django_db
def test_strict_import_of_a_release_with_every_published_oddity(capsys):
    call_command("import_items", str(ODDITIES))  # strict: no --lenient
    out = capsys.readouterr().out
    assert "created 4 intents, 4 procedures, 9 APIs, 4 flowgraphs" in out
    assert "4 workflows: 36 transitions read (33 labelled); 9 API calls; 8 APIs with output fields" in out
    assert "API 3 repeats 'searchHotel'" in out
    calls = sorted(n["label"] for fg in Flowgraph.objects.all() for n in fg.data["nodes"] if n["type"] == "api")
    assert calls == sorted(["searchHotel", "bookHotel", "checkFare", "orderRide", "queryQueue", "printDoc",
                            "cancelJob", "seatMap", "moveSeat"])
    edges = sum(len(fg.data["edges"]) for fg in Flowgraph.objects.all())
    assert edges >= 36  # every transition, plus the customer turns inserted before calls
    hotels = {o["name"]: o for o in Api.objects.get(name="searchHotel").outputs}["hotels"]
    assert [p["name"] for p in hotels["properties"]] == ["hotel_name", "price"]


@pytest.mark.django_db
def test_openapi_yaml_import_lists_what_is_not_kept(capsys):
    call_command("import_items", str(TOOLS / "bakery-3.0.yaml"))
    out = capsys.readouterr().out
    assert "Imported (openapi)" in out
    assert "note: not kept: listOrders: header parameter X-Api-Key: left out" in out
    assert "note: not kept: createOrder: id: left out: readOnly" in out
    create = Api.objects.get(name="createOrder")
    customer = {p["name"]: p for p in create.parameters}["customer"]
    assert [v["name"] for v in customer["variants"]] == ["Person", "Company"]
    assert [p["name"] for p in customer["properties"]] == ["name", "email", "company", "vat"]


@pytest.mark.django_db
@pytest.mark.parametrize("doc, message", [
    ({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
      "paths": {"/a": {"get": {"operationId": "x", "responses": {}}}, "/b": {"get": {"operationId": "x", "responses": {}}}}},
     "operationId 'x' is used twice: by GET /a and by GET /b (#/paths/~1b/get/operationId)"),
    ({"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "webhooks": {"w": {"post": {"responses": {}}}}},
     "declares no operation: it has no 'paths' and only 1 webhook(s)"),
    ({"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "components": {}},
     "declares no operation: it has no 'paths'"),
    ({"jsonrpc": "2.0", "id": 3, "error": {"code": -32603, "message": "Internal error"}},
     "JSON-RPC error response (code -32603: Internal error)"),
])
def test_refusals_are_one_short_line_and_write_nothing(tmp_path, doc, message):
    f = tmp_path / "doc.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(CommandError) as exc:
        call_command("import_items", str(f))
    text = str(exc.value)
    assert message in text and "\n" not in text and len(text) < 600 and "IntegrityError" not in text
    assert Procedure.objects.count() == 0 and Api.objects.count() == 0


@pytest.mark.django_db
def test_the_alias_bomb_is_refused_by_the_command():
    with pytest.raises(CommandError, match="the YAML aliases expand to more than"):
        call_command("import_items", str(TOOLS / "alias-bomb.yaml"))
    assert Procedure.objects.count() == 0


@pytest.mark.django_db
def test_yaml_that_does_not_start_with_openapi_and_nan_refused():
    result = items_import(raw=(TOOLS / "bakery-3.0.yaml").read_bytes(), source="bakery.yaml")
    assert result.format == "openapi" and result.created["APIs"] == 2
    with pytest.raises(ImportFormatError, match="NaN and infinity are not allowed"):
        items_import(raw=b"apis:\n  - name: a\n    desc: .nan\n    params: [{name: x, default: .inf}]\n")


@pytest.mark.django_db
def test_upload_page_and_rest_import_show_the_whole_report(client, admin_user):
    client.force_login(admin_user)
    up = SimpleUploadedFile("bakery.json", (TOOLS / "bakery-3.1.json").read_bytes())
    r = client.post("/imports/", {"file": up, "format": "auto"})
    assert r.status_code == 302
    page = client.get(r["Location"]).content.decode()
    assert "Not kept (" in page and "listOrders: header parameter X-Request-Id: left out" in page
    assert "createOrder: 1 callback(s) not read" in page
    assert "Not kept" not in client.get("/imports/").content.decode()  # shown once
    c = APIClient()
    c.force_authenticate(admin_user)
    up = SimpleUploadedFile("bakery.yaml", (TOOLS / "bakery-3.0.yaml").read_bytes())
    body = c.post("/api/imports/", {"file": up}).json()
    assert "not kept: createOrder: id: left out: readOnly (the server sets it)" in body["notes"]


@pytest.mark.django_db
def test_a_job_import_keeps_outputs_and_shows_what_was_not_kept(settings):
    from generation import services

    settings.OPENAI_BASE_URL = ""
    tools = [{"name": "find_room", "inputSchema": {"type": "object", "properties": {
        "city": {"type": "string"}, "id": {"type": "string", "readOnly": True}}},
        "outputSchema": {"type": "object", "properties": {"rooms": {"type": "array", "items": {
            "type": "object", "properties": {"number": {"type": "integer"}}}}}}}]
    flow = ("[N0](start_message){Hello}\n[N1](api){find_room}\n[N2](end_message){Bye}\n"
            "[E0](N0, N1){A city}\n[E1](N1, N2){Found}\n")
    job = services.job_create(config={"paths": 1}, enqueue=False,
                              import_data={"procedures": [{"text": "Find rooms", "apis": {"tools": tools},
                                                           "flowgraph": flow}]})
    job.refresh_from_db()
    assert job.config["import_not_kept"] == [
        "procedures[0].apis: find_room: inputSchema.id: left out: readOnly (the server sets it)"]
    api = Api.objects.get(job=job, name="find_room")
    assert api.outputs[0]["name"] == "rooms" and api.outputs[0]["properties"][0]["name"] == "number"

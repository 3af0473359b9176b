"""FlowBench's release format, OpenAPI and MCP through import_items, the upload page and the REST import."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from generation.imports import ImportFormatError, detect_format, items_import, load_document
from generation.models import Api, Flowgraph, Procedure

PIPE = Path(__file__).resolve().parent.parent / "pipeline" / "fixtures"
RELEASE = PIPE / "flowbench" / "two.jsonl"
MALFORMED_CHART = "flowchart TD\nA[Start] --> B[Ask for the code, use checkSailing]\nB --yes-->\n"


def _release_with_chart(chart: str) -> bytes:
    rec = json.loads(RELEASE.read_text().splitlines()[0])
    rec["workflow"]["flowchart"] = chart
    return (RELEASE.read_text().splitlines()[1] + "\n" + json.dumps(rec) + "\n").encode()


@pytest.mark.django_db
def test_release_file_imports_as_is_with_outputs_and_notes(capsys):
    call_command("import_items", str(RELEASE))  # auto-detected
    out = capsys.readouterr().out
    assert "Imported (flowbench)" in out and "created 2 intents, 2 procedures, 4 APIs, 2 flowgraphs" in out
    assert "case differs" in out and "mentions bookSailing without calling it" in out
    book = Api.objects.filter(name="bookSailing").first()
    outputs = {o["name"]: o for o in book.outputs}
    assert outputs["is_booked"]["enum"] == ["true", "false"]
    assert [p["name"] for p in outputs["ticket"]["properties"]] == ["ticket_number", "berth"]
    assert {p["name"]: p for p in book.parameters}["cabin"]["default"] == "Deck"
    check = Api.objects.filter(name="checkSailing").first()
    assert "day month year" in {p["name"]: p for p in check.parameters}["travel_day"]["description"]
    for fg in Flowgraph.objects.all():
        api_nodes = [n["label"] for n in fg.data["nodes"] if n["type"] == "api"]
        assert sorted(api_nodes) == ["bookSailing", "checkSailing"]  # no spurious API node
    call_command("import_items", str(RELEASE), "--format", "flowbench")  # idempotent
    assert Procedure.objects.count() == 2


def test_detection_of_every_tool_format():
    assert detect_format(load_document(RELEASE.read_bytes())) == "flowbench"
    assert detect_format(load_document((PIPE / "tools" / "shop-3.0.yaml").read_bytes())) == "openapi"
    assert detect_format(load_document((PIPE / "tools" / "rooms-3.1.json").read_bytes())) == "openapi"
    assert detect_format(load_document((PIPE / "tools" / "mcp-tools-list.json").read_bytes())) == "mcp"


@pytest.mark.django_db
def test_malformed_chart_is_refused_whole_with_file_record_key_line_and_column():
    with pytest.raises(ImportFormatError) as exc:
        items_import(raw=_release_with_chart(MALFORMED_CHART), source="release.jsonl")
    msg = str(exc.value)
    assert msg.startswith("release.jsonl, record 2 (ferry booking), key 'workflow.flowchart'")
    assert "line 3, column 2: arrow with no target" in msg
    assert Procedure.objects.count() == 0
    result = items_import(raw=_release_with_chart(MALFORMED_CHART), source="release.jsonl", lenient=True)
    assert result.created["procedures"] == 2 and any("line 3, column 2" in n for n in result.notes)


@pytest.mark.django_db
def test_truncated_and_misnamed_records_say_where():
    lines = RELEASE.read_text().splitlines()
    with pytest.raises(ImportFormatError, match=r"^r.jsonl, line 2 \(record 2\), column \d+: invalid JSON"):
        items_import(raw=(lines[0] + "\n" + lines[1][:90] + "\n").encode(), source="r.jsonl")
    rec = json.loads(lines[0])
    rec["apis"][1]["api_name"] = ""
    with pytest.raises(ImportFormatError, match=r"record 1 \(ferry booking\), key 'apis\[1\].api_name'"):
        items_import(raw=json.dumps([rec]).encode(), fmt="flowbench")


@pytest.mark.django_db
def test_openapi_yaml_and_mcp_import(capsys):
    call_command("import_items", str(PIPE / "tools" / "shop-3.0.yaml"))
    call_command("import_items", str(PIPE / "tools" / "mcp-tools-list.json"))
    assert "Imported (openapi)" in capsys.readouterr().out
    get = Api.objects.get(name="getOrder")
    assert [p["name"] for p in get.parameters] == ["order_id", "include_items"]
    assert {o["name"] for o in get.outputs} == {"status", "total", "lines", "tags"}
    assert {p["name"]: p for p in Api.objects.get(name="get_forecast").parameters}["units"]["enum"] == [
        "metric", "imperial"]


@pytest.mark.django_db
def test_import_command_refuses_malformed_chart_and_accepts_lenient(tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_bytes(_release_with_chart(MALFORMED_CHART))
    with pytest.raises(CommandError, match=r"bad.jsonl, record 2 .*line 3, column 2"):
        call_command("import_items", str(f))
    call_command("import_items", str(f), "--lenient")
    assert Procedure.objects.count() == 2


@pytest.mark.django_db
def test_upload_page_checkbox_and_api_page_shows_outputs(client, admin_user):
    client.force_login(admin_user)
    page = client.get("/imports/")
    assert b'name="lenient"' in page.content
    up = SimpleUploadedFile("bad.jsonl", _release_with_chart(MALFORMED_CHART))
    r = client.post("/imports/", {"file": up, "format": "auto"})
    assert r.status_code == 400 and b"line 3, column 2" in r.content and b"bad.jsonl, record 2" in r.content
    up = SimpleUploadedFile("bad.jsonl", _release_with_chart(MALFORMED_CHART))
    assert client.post("/imports/", {"file": up, "format": "auto", "lenient": "on"}).status_code == 302
    api = Api.objects.filter(name="bookSailing").first()
    html = client.get(f"/generation/items/api/{api.pk}/").content.decode()
    assert "is_booked" in html and "ticket_number" in html and "Deck" in html


@pytest.mark.django_db
def test_rest_import_roles_and_errors(personas):
    url = "/api/imports/"
    anon = APIClient()
    assert anon.post(url, {"file": SimpleUploadedFile("r.jsonl", RELEASE.read_bytes())}).status_code in (401, 403)
    c = APIClient()
    c.force_authenticate(personas["annotator"])
    assert c.post(url, {"file": SimpleUploadedFile("r.jsonl", RELEASE.read_bytes())}).status_code == 403
    c.force_authenticate(personas["admin"])
    assert c.get(url).status_code == 405
    bad = c.post(url, {"file": SimpleUploadedFile("bad.jsonl", _release_with_chart(MALFORMED_CHART))})
    assert bad.status_code == 400 and "line 3, column 2" in bad.json()["detail"]
    ok = c.post(url, {"file": SimpleUploadedFile("bad.jsonl", _release_with_chart(MALFORMED_CHART)),
                      "lenient": "true"})
    assert ok.status_code == 201 and ok.json()["format"] == "flowbench" and ok.json()["created"]["procedures"] == 2


def test_docs_publish_the_current_flowbench_record_schema():
    from generation.imports.flowbench import flowbench_json_schema

    docs = (Path(__file__).resolve().parents[2] / "docs" / "import-format.md").read_text()
    block = docs.split("<summary>FlowBench record JSON Schema</summary>", 1)[1].split("```json", 1)[1].split("```")[0]
    assert json.loads(block) == flowbench_json_schema()


@pytest.mark.django_db
def test_a_repeated_api_in_a_record_is_kept_once_and_noted():
    rec = json.loads(RELEASE.read_text().splitlines()[0])
    rec["apis"].append(dict(rec["apis"][0]))
    result = items_import(raw=json.dumps(rec).encode(), fmt="flowbench")
    assert result.created["APIs"] == 2 and any("repeats 'checkSailing'" in n for n in result.notes)

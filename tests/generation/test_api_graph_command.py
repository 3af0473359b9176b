"""manage.py api_graph (JSON, SVG, DOT; clear errors) and the API graph page (roles, escaping)."""
from __future__ import annotations

import json
import shutil

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from generation.models import Api, Intent, Procedure

APIS = [
    {"name": "find_user_id_by_email", "description": "Find a user id by email.",
     "parameters": {"type": "object", "properties": {"email": {"type": "string"}}},
     "returns": {"type": "string", "title": "user_id", "description": "The user id if found."}},
    {"name": "get_user_details", "description": "Get the details of a user.",
     "parameters": {"type": "object", "properties": {"user_id": {"type": "string"}}},
     "returns": {"python_type": "User", "description": "User: The user details."}},
]
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")


@pytest.fixture
def apis_file(tmp_path):
    path = tmp_path / "apis.json"
    path.write_text(json.dumps(APIS))
    return path


def test_json_output(apis_file, tmp_path):
    out = tmp_path / "g.json"
    call_command("api_graph", "--apis", str(apis_file), "--out", str(out), "--no-embeddings")
    data = json.loads(out.read_text())
    assert data["apis"] == ["find_user_id_by_email", "get_user_details"] and data["min_score"] == 0.7
    assert [(e["source"], e["target"]) for e in data["edges"]] == [("find_user_id_by_email", "get_user_details")]
    assert data["edges"][0]["fields"][0]["output"] == "user_id" and "word overlap" in data["similarity"]


def test_dot_output(apis_file, tmp_path):
    out = tmp_path / "g.dot"
    call_command("api_graph", "--apis", str(apis_file), "--out", str(out), "--no-embeddings")
    dot = out.read_text()
    assert dot.startswith("digraph api_graph {")
    assert '"find_user_id_by_email" -> "get_user_details" [label="user_id → user_id"' in dot


@needs_dot
def test_svg_output(apis_file, tmp_path):
    out = tmp_path / "g.svg"
    call_command("api_graph", "--apis", str(apis_file), "--out", str(out), "--no-embeddings")
    svg = out.read_text()
    assert svg.startswith("<svg") and "user_id → user_id" in svg and "get_user_details" in svg


def test_bad_inputs_are_named(tmp_path, apis_file):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"name": "a"},\n {"params": []}]')
    with pytest.raises(CommandError, match="bad.json: item 1: field 'name'"):
        call_command("api_graph", "--apis", str(bad), "--out", str(tmp_path / "g.json"))
    broken = tmp_path / "broken.json"
    broken.write_text('[{"name": "a"},\n oops]')
    with pytest.raises(CommandError, match="broken.json: line 2"):
        call_command("api_graph", "--apis", str(broken), "--out", str(tmp_path / "g.json"))
    with pytest.raises(CommandError, match=r"\.json, \.svg or \.dot"):
        call_command("api_graph", "--apis", str(apis_file), "--out", str(tmp_path / "g.png"))
    with pytest.raises(CommandError, match="no such file"):
        call_command("api_graph", "--apis", str(tmp_path / "none.json"), "--out", str(tmp_path / "g.json"))


@pytest.fixture
def db_apis(db):
    intent = Intent.objects.create(key="i", client="shop", issue="late", name="late order")
    proc = Procedure.objects.create(key="p", intent=intent, title="P", text="text")
    Api.objects.create(key="a1", procedure=proc, name="find_user_id", description="",
                       parameters=[{"name": "email", "type": "str"}], output_name="user_id", output_type="str")
    Api.objects.create(key="a2", procedure=proc, name="<script>alert(1)</script>", description="",
                       parameters=[{"name": "user_id", "type": "str"}], output_name="done", output_type="bool")
    return proc


@needs_dot
def test_page_draws_the_database_graph_escaped(client, researcher, db_apis, drawing_queue):
    client.force_login(researcher)
    assert "Drawing…" in client.get(reverse("generation:api_graph")).content.decode()
    drawing_queue.run()  # the worker
    html = client.get(reverse("generation:api_graph")).content.decode()
    assert "<svg" in html and "user_id → user_id" in html
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html
    html = client.get(reverse("generation:api_graph"), {"procedure": db_apis.pk, "min_score": "0.99"}).content.decode()
    assert "1 edge at score ≥ 0.99" in html  # user_id → user_id is an exact match


def test_page_roles(client, annotator_a, db):
    url = reverse("generation:api_graph")
    assert client.get(url).status_code == 302  # anonymous: login
    client.force_login(annotator_a)
    assert client.get(url).status_code == 403
    assert client.post(url).status_code in (403, 405)


def test_page_rejects_a_bad_score(client, researcher, db):
    client.force_login(researcher)
    response = client.get(reverse("generation:api_graph"), {"min_score": "7"})
    assert response.status_code == 200 and "less than or equal to 1" in response.content.decode()


def test_imported_output_schemas(tmp_path):
    """tau-bench's retail tools declare no output: no edge until --outputs imports our schemas."""
    from pathlib import Path

    tools = Path(__file__).resolve().parents[3] / "shared" / "data" / "tau_bench" / "retail" / "tools.json"
    if not tools.exists():
        pytest.skip("../shared/data/tau_bench is not here")
    schemas = Path(__file__).resolve().parents[1] / "pipeline" / "data" / "tau_bench_retail_outputs.json"
    out = tmp_path / "g.json"
    call_command("api_graph", "--apis", str(tools), "--out", str(out), "--no-embeddings")
    assert json.loads(out.read_text())["edges"] == []
    call_command("api_graph", "--apis", str(tools), "--outputs", str(schemas), "--out", str(out), "--no-embeddings")
    edges = {(e["source"], e["target"]): e for e in json.loads(out.read_text())["edges"]}
    assert {"output": "orders[]", "input": "order_id", "via": "list item"}.items() <= \
        edges[("get_user_details", "get_order_details")]["fields"][0].items()
    assert ("cancel_pending_order", "return_delivered_order_items") not in edges  # a cancelled order
    bad = tmp_path / "bad.json"
    bad.write_text('{"no_such_tool": {"returns": {"type": "string", "title": "x"}}}')
    with pytest.raises(CommandError, match="bad.json: output schemas name APIs that are not in the list: no_such_tool"):
        call_command("api_graph", "--apis", str(tools), "--outputs", str(bad), "--out", str(out))

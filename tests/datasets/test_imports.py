"""Imports: the Almita format, API lists, tools, workflows; atomic refusal; idempotence."""
from __future__ import annotations

import copy
import json

import pytest
from django.core.management import CommandError, call_command

from generation.imports import ImportFormatError, items_import
from generation.models import (
    Api, Conversation, ConversationGraph, Flowgraph, Intent, Origin, Procedure, SampledPath, Test,
)
from tests.datasets.builders import document

ALL_MODELS = (Intent, Procedure, Api, Flowgraph, ConversationGraph, SampledPath, Conversation, Test)


def counts() -> dict[str, int]:
    return {m.__name__: m.objects.count() for m in ALL_MODELS}


@pytest.mark.django_db
def test_almita_document_imports_with_lineage_and_tests():
    result = items_import(raw=json.dumps(document()), fmt="auto")
    assert result.format == "almita"
    c = counts()
    assert c["Intent"] == 2 and c["Procedure"] == 2 and c["Api"] == 4 and c["Flowgraph"] == 2
    assert c["ConversationGraph"] == 2 and c["SampledPath"] == 6 and c["Conversation"] == 6 and c["Test"] > 6
    conv = Conversation.objects.select_related("path__conversation_graph__flowgraph__procedure").first()
    assert conv.path.conversation_graph.flowgraph.procedure == conv.procedure
    assert conv.origin == Origin.IMPORTED and conv.key.startswith("imp:conversation:") and conv.job is None
    test = Test.objects.filter(conversation=conv).first()
    assert test.context == conv.messages[: test.position]


@pytest.mark.django_db
def test_reimporting_the_same_file_creates_nothing():
    raw = json.dumps(document())
    items_import(raw=raw)
    before = counts()
    again = items_import(raw=raw)
    assert again.total_created == 0
    assert counts() == before
    # Same content with other local ids is the same material too.
    doc = document()
    for rec in doc["records"]:
        rec["id"] = "x-" + rec["id"]
        for ref in ("intent", "procedure", "flowgraph", "conversation_graph", "path"):
            if isinstance(rec.get(ref), str):
                rec[ref] = "x-" + rec[ref]
    assert items_import(raw=json.dumps(doc)).total_created == 0


@pytest.mark.django_db
def test_tests_are_extracted_when_the_record_has_none():
    doc = document(n_procedures=1, paths_per_graph=1)
    conv = next(r for r in doc["records"] if r["kind"] == "conversation")
    expected = len(conv.pop("tests"))
    items_import(raw=json.dumps(doc))
    assert Test.objects.count() == expected


def _break(doc, kind, mutate):
    rec = next(r for r in doc["records"] if r["kind"] == kind)
    mutate(rec)
    return doc


MALFORMED = [
    ("procedure text missing", lambda d: _break(d, "procedure", lambda r: r.pop("text")), "key 'text'"),
    ("intent name not a string", lambda d: _break(d, "intent", lambda r: r.update(name=5)), "key 'name'"),
    ("dangling parent", lambda d: _break(d, "flowgraph", lambda r: r.update(procedure="nope")), "key 'procedure'"),
    ("edge to nowhere", lambda d: _break(d, "flowgraph", lambda r: r["graph"]["edges"].append(
        {"id": "E99", "source": "N0", "target": "N77", "label": ""})), "key 'graph'"),
    ("path off the graph", lambda d: _break(d, "path", lambda r: r.update(node_ids=["N0", "N0"])), "key 'node_ids[1]'"),
    ("bad message role", lambda d: _break(d, "conversation", lambda r: r["messages"].append(
        {"role": "system", "content": "x"})), "key 'messages["),
    ("test position out of range", lambda d: _break(d, "conversation", lambda r: r["tests"][0].update(position=999)),
     "key 'tests[0].position'"),
    ("api params not a list", lambda d: _break(d, "procedure", lambda r: r["apis"][0].update(params=7)), "key 'apis'"),
    ("name too long", lambda d: _break(d, "intent", lambda r: r.update(client="x" * 201)), "key 'client'"),
    ("NUL in text", lambda d: _break(d, "procedure", lambda r: r.update(text="a\x00b")), "NUL"),
    ("noise rate above one", lambda d: _break(d, "conversation_graph", lambda r: r.update(noise_rate=3)), "noise_rate"),
    ("unknown kind", lambda d: d["records"].append({"kind": "virus", "id": "v"}) or d, "key 'kind'"),
    ("duplicate id", lambda d: d["records"].append(copy.deepcopy(d["records"][0])) or d, "key 'id'"),
    ("wrong version", lambda d: d.update(version=99) or d, "key 'version'"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("label,mutate,needle", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_file_is_refused_whole(label, mutate, needle):
    doc = mutate(document())
    with pytest.raises(ImportFormatError) as exc:
        items_import(raw=json.dumps(doc))
    assert needle in str(exc.value)
    assert "record" in str(exc.value) or "document" in str(exc.value)
    assert all(n == 0 for n in counts().values()), "a refused file must write nothing"


HOSTILE = [
    ("deep nesting", ("[" * 5000) + ("]" * 5000)),
    ("NaN", '{"format": "almita", "records": [{"kind": "intent", "id": "a", "client": "c", "issue": NaN, "name": "n"}]}'),
    ("not JSON", "<?xml version='1.0'?><!DOCTYPE x [<!ENTITY a 'aaaa'>]><x>&a;</x>"),
    ("empty", ""),
    ("binary", b"\xff\xfe\x00\x01garbage"),
    ("records not a list", '{"format": "almita", "records": {"a": 1}}'),
    ("record not an object", '{"format": "almita", "records": [1, 2, 3]}'),
    ("prototype keys", '{"format": "almita", "records": [{"kind": "__proto__", "id": "constructor"}]}'),
]


@pytest.mark.django_db
@pytest.mark.parametrize("label,raw", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_files_are_refused(label, raw):
    with pytest.raises(ImportFormatError):
        items_import(raw=raw, fmt="almita" if label != "not JSON" else "auto")
    assert all(n == 0 for n in counts().values())


@pytest.mark.django_db
def test_a_late_conflict_rolls_back_everything_written_before_it():
    """A file whose last record collides with existing data leaves no partial import."""
    items_import(raw=json.dumps({"apis": [{"name": "a", "desc": "x", "params": [], "output": "str"}]}),
                 name="shop", procedure_text="Help.")
    before = counts()
    with pytest.raises(ImportFormatError):
        items_import(raw=json.dumps({"format": "almita", "records": [
            {"kind": "intent", "id": "i", "client": "c", "issue": "i", "name": "n"},
            {"kind": "procedure", "id": "p", "intent": "i", "text": "t", "apis": [
                {"name": "dup", "desc": ""}, {"name": "dup", "desc": "again"}]},
        ]}))
    assert counts() == before


@pytest.mark.django_db
def test_html_in_imported_text_is_stored_verbatim_and_escaped_on_pages(client, admin_user):
    doc = document(n_procedures=1, paths_per_graph=1)
    doc["records"][0]["name"] = "<script>alert(1)</script>"
    items_import(raw=json.dumps(doc))
    assert Intent.objects.get().name == "<script>alert(1)</script>"


@pytest.mark.django_db
def test_paper_api_list_and_procedure_text():
    raw = json.dumps({"apis": [
        {"name": "get_order", "desc": "Find an order", "params": [{"name": "order_id"}], "output": {"name": "order", "type": "dict"}},
        {"name": "cancel_order", "desc": "Cancel", "params": [{"order_id": "int"}], "output": "bool"},
    ]})
    result = items_import(raw=raw, fmt="apis", name="shop", procedure_text="1. Find the order.\n2. Cancel it.")
    assert result.created["APIs"] == 2
    proc = Procedure.objects.get()
    assert proc.text.startswith("1. Find the order") and proc.intent.name == "shop"
    assert list(proc.apis.order_by("pk").values_list("name", flat=True)) == ["get_order", "cancel_order"]
    assert items_import(raw=raw, fmt="apis", name="shop", procedure_text="1. Find the order.\n2. Cancel it.").total_created == 0


@pytest.mark.django_db
def test_tau_bench_tools_import_as_function_calling(shared_data):
    for domain in ("airline", "retail"):
        path = shared_data / "tau_bench" / domain / "tools.json"
        tools = json.loads(path.read_text())
        wiki = (shared_data / "tau_bench" / domain / "wiki.md").read_text()
        result = items_import(raw=path.read_bytes(), fmt="auto", name=f"tau-bench {domain}", procedure_text=wiki)
        assert result.format == "openai_tools"
        proc = Procedure.objects.get(intent__name=f"tau-bench {domain}")
        assert proc.apis.count() == len(tools)
        first = tools[0]["function"]
        api = proc.apis.get(name=first["name"])
        required = set(first["parameters"].get("required", []))
        assert {p["name"] for p in api.parameters if p["required"]} == required
    assert items_import(raw=(shared_data / "tau_bench" / "retail" / "tools.json").read_bytes(),
                        name="tau-bench retail",
                        procedure_text=(shared_data / "tau_bench" / "retail" / "wiki.md").read_text()).total_created == 0


@pytest.mark.django_db
def test_abcd_guidelines_import_as_procedures(shared_data):
    path = shared_data / "abcd" / "guidelines.json"
    data = json.loads(path.read_text())
    result = items_import(raw=path.read_bytes(), fmt="auto")
    assert result.format == "abcd"
    assert Intent.objects.count() == len(data)
    assert Procedure.objects.count() == sum(len(f["subflows"]) for f in data.values())
    flow, body = next(iter(data.items()))
    sub, sbody = next(iter(body["subflows"].items()))
    proc = Procedure.objects.get(title=f"{flow}: {sub}")
    assert sbody["actions"][0]["text"].strip() in proc.text
    assert proc.apis.exists()


@pytest.mark.django_db
def test_flowbench_workflow_goes_through_the_mermaid_converter():
    workflow = {
        "domain": "Travel", "scenario": "flight booking",
        "text": "Ask for the flight id, check availability, then reserve.",
        "flowchart": "flowchart TD\nA(Start)--Book a flight-->B>Ask for the flight id and call checkAvailability]\n"
                     "B--available-->C[Tell the user it is available]\nB--unavailable-->D[Apologise]",
        "toolbox": [{"name": "checkAvailability", "description": "Check a flight",
                     "input_parameters": {"plan_code": {"type": "string", "required": True}}}],
    }
    result = items_import(raw=json.dumps([workflow]), fmt="auto")
    assert result.format == "flowbench"
    fg = Flowgraph.objects.get()
    types = {n["type"] for n in fg.data["nodes"]}
    assert "api" in types and "start_message" in types
    assert fg.procedure.apis.get().name == "checkAvailability"
    assert items_import(raw=json.dumps([workflow])).total_created == 0


@pytest.mark.django_db
def test_import_items_command(tmp_path, shared_data):
    good = tmp_path / "doc.json"
    good.write_text(json.dumps(document(n_procedures=1, paths_per_graph=1)))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "almita", "records": [{"kind": "intent", "id": "x"}]}))
    with pytest.raises(CommandError, match="refused, nothing imported: .*bad.json, record 1 \\(intent x\\), key 'client'"):
        call_command("import_items", str(good), str(bad))
    assert Intent.objects.count() == 0, "several files are imported in one transaction"
    call_command("import_items", str(good))
    call_command("import_items", str(shared_data / "tau_bench" / "airline" / "tools.json"),
                 "--procedure-file", str(shared_data / "tau_bench" / "airline" / "wiki.md"))
    assert Intent.objects.filter(name="airline tools").exists()

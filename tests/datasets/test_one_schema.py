"""tests.csv, tests.jsonl and the Hugging Face folder carry one schema (issue #31): the same column
names in the same order for the two flat files, and the same values in all three once each is
read back by the rules docs/datasets.md gives for it (read here independently of the exporters)."""
from __future__ import annotations

import csv
import io
import json

import pytest

from curation.releases.exports import CSV_COLUMNS, file_sources, hf_sources
from curation.releases.services import release_create
from generation.pipeline.extract import format_api_call
from tests.datasets.conftest import accept_all

INT_COLUMNS = ("test_id", "conversation_id", "position", "intent_id", "procedure_id")


def _from_jsonl(d: dict) -> dict:
    """The nested record flattened by the documented rules (written out here, not imported)."""
    exp = d["expected"]
    call = exp["type"] == "api_call"
    return {
        "test_id": d["test_id"], "conversation_id": d["conversation_id"], "position": d["position"],
        "intent_id": d["intent"]["id"], "intent": d["intent"]["name"], "client": d["intent"]["client"],
        "procedure_id": d["procedure"]["id"], "procedure": d["procedure"]["text"], "apis": d["apis"],
        "context": [{"role": m["role"], "content": m["content"]} for m in d["context"]],
        "expected_type": exp["type"],
        "expected_content": format_api_call(exp["name"], exp.get("parameters") or {}) if call else exp["content"],
        "expected_api_name": exp["name"] if call else "",
        "expected_parameters": exp.get("parameters") or {} if call else {},
        "noise_kinds": d.get("noise_kinds") or [], "flowgraph_id": d.get("flowgraph_id"),
        "conversation_graph_id": d.get("conversation_graph_id"), "path_node_ids": d.get("path_node_ids") or [],
        "expected_action": d.get("expected_action") or "",
    }


def _from_csv(row: dict) -> dict:
    out = dict(row)
    for k in INT_COLUMNS:
        out[k] = int(row[k])
    for k in ("flowgraph_id", "conversation_graph_id"):
        out[k] = int(row[k]) if row[k] else None
    for k in ("apis", "context", "expected_parameters"):
        out[k] = json.loads(row[k]) if row[k] else {}
    out["noise_kinds"] = row["noise_kinds"].split(",") if row["noise_kinds"] else []
    out["path_node_ids"] = row["path_node_ids"].split(" ") if row["path_node_ids"] else []
    return out


def _from_hf(row: dict) -> dict:
    out = dict(row)
    for k in ("flowgraph_id", "conversation_graph_id"):
        out[k] = None if row[k] == -1 else row[k]
    for k in ("apis", "expected_parameters", "path_node_ids"):
        out[k] = json.loads(row[k])
    out["noise_kinds"] = row["noise_kinds"].split(",") if row["noise_kinds"] else []
    return out


def _lines(chunks) -> list[dict]:
    return [json.loads(line) for line in "".join(chunks).splitlines() if line]


@pytest.mark.django_db
def test_csv_jsonl_and_hf_carry_one_schema(imported, researcher):
    accept_all()
    release = release_create(name="schema", kind="curated", filters={}, created_by=researcher)
    reader = csv.DictReader(io.StringIO("".join(file_sources(release)["tests.csv"]())))
    csv_rows = list(reader)
    jsonl = _lines(file_sources(release)["tests.jsonl"]())
    hf = _lines(hf_sources(release)["tests.jsonl"]())
    assert reader.fieldnames == CSV_COLUMNS
    assert "expected_content" in CSV_COLUMNS and "expected_output" not in CSV_COLUMNS
    assert all(list(r) == CSV_COLUMNS for r in hf)  # same names, same order (conversation_graph_id kept)
    assert len(csv_rows) == len(jsonl) == len(hf) == release.entries.count() > 0
    by_id = {d["test_id"]: _from_jsonl(d) for d in jsonl}
    kinds = set()
    for row in csv_rows:
        want = by_id[int(row["test_id"])]
        assert _from_csv(row) == want, row["test_id"]
        kinds.add(want["expected_type"])
    for row in hf:
        assert _from_hf(row) == by_id[row["test_id"]], row["test_id"]
    assert {"reply", "api_call"} <= kinds  # both shapes of expected_content compared
    assert any(r["conversation_graph_id"] is not None for r in by_id.values())

"""Writing planned rows in one transaction, and exporting rows in the same format."""
from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from django.db import IntegrityError, transaction

from generation.drawings import graphs_stored
from generation.models import (
    Api, Conversation, ConversationGraph, Flowgraph, Intent, Origin, Procedure, SampledPath, Test,
)
from generation.pipeline.dialogue_actions import answer_action, label_turns

from .common import ImportFormatError, ImportResult, PlannedRow

MODELS = {
    "intent": Intent, "procedure": Procedure, "flowgraph": Flowgraph,
    "conversation_graph": ConversationGraph, "path": SampledPath, "conversation": Conversation,
}
PARENT_FIELD = {
    "procedure": "intent", "flowgraph": "procedure", "conversation_graph": "flowgraph",
    "path": "conversation_graph", "conversation": "procedure",
}
LABELS = {
    "intent": "intents", "procedure": "procedures", "api": "APIs", "flowgraph": "flowgraphs",
    "conversation_graph": "conversation graphs", "path": "paths", "conversation": "conversations",
    "test": "tests",
}


@transaction.atomic
def write_rows(fmt: str, rows: list[PlannedRow], notes: list[str]) -> ImportResult:
    """Create the planned rows that do not exist yet, in one transaction."""
    result = ImportResult(format=fmt, notes=notes)
    created = {k: 0 for k in LABELS}
    existing = {k: 0 for k in LABELS}
    objects: dict[str, Any] = {}
    new_graphs: dict[type, list[int]] = {Flowgraph: [], ConversationGraph: []}
    for row in rows:
        model = MODELS[row.kind]
        obj = model.objects.filter(job__isnull=True, key=row.key).first()
        if obj is not None:
            existing[row.kind] += 1
            objects[row.local_id] = obj
            continue
        fields = dict(row.fields)
        if row.parent is not None:
            fields[PARENT_FIELD[row.kind]] = objects[row.parent]
        if row.kind == "conversation" and row.path is not None:
            fields["path"] = objects[row.path]
        obj = model(origin=Origin.IMPORTED, key=row.key, **fields)
        try:
            with transaction.atomic():
                obj.save()
                if row.kind == "procedure":
                    created["api"] += _write_apis(obj, row)
                elif row.kind == "conversation":
                    created["test"] += _write_tests(obj, row)
        except IntegrityError as exc:
            # The database's constraints are the last guard; their text (SQL, values) is not a message.
            raise ImportFormatError(f"{LABELS[row.kind][:-1]} {row.local_id}", "",
                                    f"conflicts with existing data ({_constraint(exc)})") from None
        objects[row.local_id] = obj
        created[row.kind] += 1
        if model in new_graphs:
            new_graphs[model].append(obj.pk)
    for model, ids in new_graphs.items():
        graphs_stored(model, ids)  # drawn by the worker after the commit
    result.created = {LABELS[k]: n for k, n in created.items()}
    result.existing = {LABELS[k]: n for k, n in existing.items() if n}
    return result


def _constraint(exc: IntegrityError) -> str:
    """The name of the violated constraint when the database says it, else its kind."""
    text = str(exc)
    for name in ("api_unique_name_per_procedure", "unique", "foreign key", "not null", "check"):
        if name in text.lower():
            return "two APIs of one procedure share a name" if name == "api_unique_name_per_procedure" else \
                f"a {name} constraint"
    return "a database constraint"


def _write_apis(procedure: Procedure, row: PlannedRow) -> int:
    objs = []
    for d in row.apis:  # already in the paper's shape: common._apis wrote them with api_to_dict
        objs.append(Api(
            procedure=procedure, origin=Origin.IMPORTED, key=f"{row.key}:api:{d['name']}"[:200],
            name=d["name"], description=d["desc"], parameters=d["params"], outputs=d.get("outputs") or [],
            output_name=d["output"]["name"], output_type=d["output"]["type"],
        ))
    # Keys must fit the column: hash them when the procedure key plus the name is too long.
    for o in objs:
        if len(f"{row.key}:api:{o.name}") > 200:
            o.key = "imp:api:" + hashlib.sha256(f"{row.key}:{o.name}".encode()).hexdigest()
    Api.objects.bulk_create(objs)
    return len(objs)


def _write_tests(conversation: Conversation, row: PlannedRow) -> int:
    objs = []
    for t in row.tests:
        exp = t["expected"]
        objs.append(Test(
            conversation=conversation, origin=Origin.IMPORTED,
            key="imp:test:" + hashlib.sha256(f"{row.key}:{t['position']}".encode()).hexdigest(),
            position=t["position"], context=t["context"], expected_type=exp["type"],
            expected_text=exp.get("content", "") if exp["type"] == "reply" else "",
            expected_api_name=exp.get("name", "") if exp["type"] == "api_call" else "",
            expected_parameters=exp.get("parameters", {}) if exp["type"] == "api_call" else {},
            action=answer_action(t["context"], exp),  # #17: the ToolDial action of the expected step
        ))
    Test.objects.bulk_create(objs)
    Conversation.objects.filter(pk=conversation.pk).update(turn_actions=label_turns(conversation.messages or []))
    return len(objs)


# --- export in the same format ------------------------------------------------------------------

def api_row_to_dict(api: Api) -> dict[str, Any]:
    d = {
        "name": api.name, "desc": api.description,
        "params": [{**p, "name": p.get("name", ""), "type": p.get("type", "str"),
                    "required": bool(p.get("required", True)), "description": p.get("description", "")}
                   for p in api.parameters],
        "output": {"name": api.output_name, "type": api.output_type},
    }
    if api.outputs:
        d["outputs"] = api.outputs
    return d


def test_row_to_dict(test: Test) -> dict[str, Any]:
    return {"position": test.position, "context": test.context, "expected": test.expected}


def record_id(kind: str, pk: int) -> str:
    return f"{kind}-{pk}"


def intent_record(o: Intent) -> dict[str, Any]:
    return {"kind": "intent", "id": record_id("intent", o.pk), "client": o.client, "issue": o.issue, "name": o.name}


def procedure_record(o: Procedure, apis: list[Api]) -> dict[str, Any]:
    return {"kind": "procedure", "id": record_id("procedure", o.pk), "intent": record_id("intent", o.intent_id),
            "title": o.title, "text": o.text, "apis": [api_row_to_dict(a) for a in sorted(apis, key=lambda a: a.pk)]}


def flowgraph_record(o: Flowgraph) -> dict[str, Any]:
    return {"kind": "flowgraph", "id": record_id("flowgraph", o.pk), "procedure": record_id("procedure", o.procedure_id),
            "graph": o.data, "text": o.text}


def conversation_graph_record(o: ConversationGraph) -> dict[str, Any]:
    return {"kind": "conversation_graph", "id": record_id("conversation_graph", o.pk),
            "flowgraph": record_id("flowgraph", o.flowgraph_id), "mode": o.mode, "graph": o.data, "text": o.text,
            "noise_rate": o.noise_rate, "noise_kinds": o.noise_kinds}


def path_record(o: SampledPath) -> dict[str, Any]:
    return {"kind": "path", "id": record_id("path", o.pk),
            "conversation_graph": record_id("conversation_graph", o.conversation_graph_id),
            "node_ids": o.node_ids, "sampler": o.sampler, "seed": o.seed, "index": o.index}


def conversation_record(o: Conversation, tests: Iterable[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": "conversation", "id": record_id("conversation", o.pk),
            "procedure": record_id("procedure", o.procedure_id),
            "path": record_id("path", o.path_id) if o.path_id else None,
            "mode": o.mode, "messages": o.messages, "noise_kinds": o.noise_kinds, "tests": list(tests)}

"""FlowBench workflows as its authors publish them: one JSON object per line.

A release record is ``{uuid, domain, role, scenario, apis: [{api_name, api_description,
input_parameters, output_parameters, raw_block}], workflow: {text, code, flowchart, summary}}``
(:class:`FlowBenchRecord`; its JSON Schema is published in docs/import-format.md). The older
hand-made shape ``{name|scenario, text, flowchart, tools|apis}`` is still read. Each record becomes
an intent (the domain as client), a procedure (the workflow text) with its APIs (input and output
parameters kept) and a flowgraph converted from the chart. Malformed Mermaid refuses the file
unless ``lenient``; everything the converter assumed or inserted is returned as notes.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from generation.pipeline.apis import ApiFormatError, api_to_dict, parse_api_list
from generation.pipeline.formats import graph_to_json
from generation.pipeline.toolspecs import dedupe_apis

from .common import ImportFormatError, PlannedRow, _apis, _dedupe, _identity, _intent_row, _procedure_row, _violations


class FlowBenchParameter(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str | list[str] = "string"
    description: str = ""
    required: bool | None = None
    properties: dict[str, "FlowBenchParameter"] | None = None


class FlowBenchApi(BaseModel):
    model_config = ConfigDict(extra="allow")
    api_name: str = Field(min_length=1, max_length=200)
    api_description: str = ""
    input_parameters: dict[str, FlowBenchParameter] | None = None
    output_parameters: dict[str, FlowBenchParameter] | None = None
    raw_block: str = ""


class FlowBenchWorkflow(BaseModel):
    model_config = ConfigDict(extra="allow")
    text: str = ""
    code: str = ""
    flowchart: str = Field(min_length=1)
    summary: str = ""


class FlowBenchRecord(BaseModel):
    """One workflow of FlowBench's release (one line of its JSON Lines file)."""
    model_config = ConfigDict(extra="allow")
    uuid: str | int | None = None
    domain: str = ""
    role: str = ""
    scenario: str = Field(min_length=1)
    apis: list[FlowBenchApi] = []
    workflow: FlowBenchWorkflow


def _key(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def is_release_record(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("workflow"), dict)


def looks_flowbench(d: Any) -> bool:
    if is_release_record(d) and "apis" in d:
        return True
    return isinstance(d, dict) and any(k in d for k in ("flowchart", "mermaid")) and any(
        k in d for k in ("tools", "toolbox", "apis"))


def _fields(item: dict, where: str) -> tuple[str, str, str, str, Any, str]:
    """(name, client, text, chart, tools, key of the chart) from either shape."""
    if is_release_record(item):
        try:
            FlowBenchRecord.model_validate(item)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ImportFormatError(where, _key(err["loc"]), err["msg"]) from None
        wf = item["workflow"]
        text = next((wf[k] for k in ("text", "summary") if isinstance(wf.get(k), str) and wf[k].strip()), "")
        name = item["scenario"].strip()
        return (name, str(item.get("domain") or item.get("role") or "FlowBench"), text or name,
                wf["flowchart"], item.get("apis") or [], "workflow.flowchart")
    name = next((item[k] for k in ("scenario", "name", "role", "title")
                 if isinstance(item.get(k), str) and item[k].strip()), "")
    if not name:
        raise ImportFormatError(where, "scenario", "is required (or 'name' / 'role')")
    text = next((item[k] for k in ("text", "procedure", "description") if isinstance(item.get(k), str)), "")
    if not text.strip():
        raise ImportFormatError(where, "text", "is required (the workflow as text, or 'procedure')")
    chart_key = next((k for k in ("flowchart", "mermaid") if isinstance(item.get(k), str)), "flowchart")
    chart = item.get(chart_key) or ""
    if not chart.strip():
        raise ImportFormatError(where, chart_key, "is required (a Mermaid flowchart)")
    tools_key = next((k for k in ("tools", "toolbox", "apis") if k in item), "")
    return name, str(item.get("domain") or "FlowBench"), text, chart, item.get(tools_key) if tools_key else [], chart_key


def plan_flowbench(data: Any, *, lenient: bool = False) -> tuple[list[PlannedRow], list[str]]:
    """Rows for every workflow of the file, and the converter's notes (prefixed by the scenario)."""
    from generation.pipeline.mermaid import MermaidSyntaxError, mermaid_to_flowgraph

    items = data if isinstance(data, list) else [data]
    rows: list[PlannedRow] = []
    notes: list[str] = []
    totals = {"transitions": 0, "labelled": 0, "calls": 0, "outputs": 0}
    for i, item in enumerate(items):
        where = f"record {i + 1}" if len(items) > 1 or isinstance(data, list) else "document"
        if not isinstance(item, dict):
            raise ImportFormatError(where, "", "must be an object")
        name = str(item.get("scenario") or item.get("name") or "")[:60]
        if name:
            where = f"{where} ({name})"
        name, client, text, chart, raw_tools, chart_key = _fields(item, where)
        tools_key = "apis" if "apis" in item else next((k for k in ("tools", "toolbox") if k in item), "apis")
        raw_tools, repeats = dedupe_apis(raw_tools)
        notes += [f"{name}: {line}" for line in repeats]
        try:
            specs = parse_api_list({"apis": raw_tools} if isinstance(raw_tools, list) else raw_tools)
        except ApiFormatError as exc:
            raise ImportFormatError(where, tools_key, str(exc)) from None
        notes += [f"not kept: {name}: {line}" for line in getattr(specs, "report", [])]
        try:
            g, report = mermaid_to_flowgraph(chart, specs, strict=not lenient)
        except MermaidSyntaxError as exc:
            raise ImportFormatError(where, chart_key, "malformed Mermaid (import with lenient to convert what "
                                    "can be read): " + "; ".join(str(p) for p in exc.problems)) from None
        if g.number_of_nodes() == 0:
            raise ImportFormatError(where, chart_key, "holds no node")
        # After the chart: its parameter notes have been attached to the specs' descriptions.
        apis = _apis([api_to_dict(s) for s in specs], where)
        stats = g.graph.pop("chart", None)
        if stats:
            with_outputs = sum(1 for a in apis if a.get("outputs"))
            notes.append(f"{name}: read {stats['states']} states and {stats['transitions']} transitions "
                         f"({stats['labelled']} labelled); {stats['calls']} API calls; {with_outputs} of "
                         f"{len(apis)} APIs with output fields")
            for key in totals:
                totals[key] += stats.get(key, 0)
            totals["outputs"] += with_outputs
        notes += [f"{name}: {line}" for line in report]
        intent = _intent_row(f"i{i}", client, str(item.get("role") or text.strip().splitlines()[0]), name, where)
        proc = _procedure_row(f"p{i}", intent, name, text, apis, where)
        data_json = graph_to_json(g)
        f = {"data": data_json, "text": "", "validation": _violations("flowgraph", g, {a["name"] for a in apis})}
        flow = PlannedRow("flowgraph", f"f{i}", _identity("flowgraph", proc.key, {"data": data_json, "text": ""}),
                          f, parent=proc.local_id)
        rows += [intent, proc, flow]
    if len(items) > 1:
        notes.insert(0, f"{len(items)} workflows: {totals['transitions']} transitions read ({totals['labelled']} "
                        f"labelled); {totals['calls']} API calls; {totals['outputs']} APIs with output fields")
    return _dedupe(rows), notes


def flowbench_json_schema() -> dict[str, Any]:
    return FlowBenchRecord.model_json_schema()

"""The LLM-authored stages up to the flowgraph: intents, procedures, APIs, flowgraphs, conversation graphs."""
from __future__ import annotations

import re
from typing import Any

from generation import multi_api, prompts
from generation.models import Api, ConversationGraph, Flowgraph, Intent, Procedure
from generation.pipeline.apis import ApiFormatError, api_to_dict, parse_api_list
from generation.pipeline.convert import flowgraph_to_conversation_graph
from generation.pipeline.formats import GraphFormatError, graph_from_json, graph_to_json, parse_graph_text, write_graph_text
from generation.pipeline.validate import errors, validate_conversation_graph, validate_flowgraph
from generation.stages.base import (
    INTENT_BATCH,
    MIN_PROCEDURE_CHARS,
    Context,
    ItemResult,
    Output,
    api_specs,
    apis_json,
    discard_for_violations,
    list_in,
    parse_json_reply,
    violations_json,
)


def run_intents(ctx: Context, key: str, index: int, parent: str) -> ItemResult:
    total = int(ctx.config.get("intents") or 0)
    want = min(INTENT_BATCH, total - index * INTENT_BATCH)
    messages = prompts.render("A.1", number_issues=want, batch=index)

    def interpret(reply: str) -> ItemResult:
        result = ItemResult()
        try:
            items = list_in(parse_json_reply(reply), "intents", "issues")
        except ValueError as exc:
            result.generated = 1
            return result.discard(key, "invalid_json", str(exc), reply)
        if items is None:
            result.generated = 1
            return result.discard(key, "wrong_shape", "expected a list of intents", reply)
        for i, item in enumerate(items[:want]):
            out_key = f"intents:{index * INTENT_BATCH + i}"
            result.generated += 1
            if not isinstance(item, dict) or not all(isinstance(item.get(f), str) and item[f].strip()
                                                    for f in ("client", "issue", "name")):
                result.discard(out_key, "intent_missing_field",
                               f"intent {i + 1}: client, issue and name must be non-empty text", item)
                continue
            result.passed += 1
            result.outputs.append(Output(Intent, out_key, {
                "client": item["client"].strip()[:200], "issue": item["issue"].strip(),
                "name": item["name"].strip()[:200],
            }))
        return result

    return ctx.ask("intents", "A.1", key, messages, True, interpret, sample=index)


_STEP = re.compile(r"^\s*\d+[.)]\s+\S", re.MULTILINE)
MIN_PROCEDURE_STEPS = 2


def run_procedures(ctx: Context, key: str, index: int, parent: str) -> ItemResult:
    intent = Intent.objects.get(pk=int(parent))
    k = int(ctx.config.get("procedures_per_intent") or 1)
    messages = prompts.render("A.2", client=intent.client, issue=intent.issue, name=intent.name,
                              variant=index % k + 1, variants=k)
    chain = multi_api.chain_for(ctx.config, index)  # #17: a procedure seeded from an API chain
    messages = multi_api.with_chain_a2(messages, chain)

    def interpret(reply: str) -> ItemResult:
        text = reply.strip()
        result = ItemResult(generated=1)
        if len(text) < MIN_PROCEDURE_CHARS:
            return result.discard(key, "procedure_too_short",
                                  f"{len(text)} characters (< {MIN_PROCEDURE_CHARS})", text)
        steps = len(_STEP.findall(text))
        if steps < MIN_PROCEDURE_STEPS:
            # A.2 asks for a numbered, step-by-step document; JSON, graph text or prose is not one.
            return result.discard(key, "procedure_no_steps",
                                  f"{steps} numbered steps (write at least {MIN_PROCEDURE_STEPS}, one per line: "
                                  "'1. ...')", text)
        title = next((ln.lstrip("# ").strip() for ln in text.splitlines() if ln.strip()), "")[:300]
        result.passed = 1
        result.outputs.append(Output(Procedure, key, {"intent_id": intent.pk, "title": title, "text": text,
                                                      "api_chain": chain or {}}))
        return result

    return ctx.ask("procedures", "A.2", key, messages, False, interpret, sample=index)


def run_apis(ctx: Context, key: str, index: int, parent: str) -> ItemResult:
    procedure = Procedure.objects.get(pk=int(parent))
    messages = prompts.render("A.3", procedure=procedure.text)
    messages = multi_api.with_chain_a3(messages, procedure.api_chain or None)  # #17

    def interpret(reply: str) -> ItemResult:
        result = ItemResult(generated=1)
        try:
            data = parse_json_reply(reply)
        except ValueError as exc:
            return result.discard(key, "invalid_json", str(exc), reply)
        try:
            specs = parse_api_list(data)
        except ApiFormatError as exc:
            return result.discard(key, "wrong_shape", str(exc), reply)
        if not specs:
            return result.discard(key, "no_apis", "the procedure needs no API", reply)
        result.passed = 1
        for spec in specs:
            d = api_to_dict(spec)
            result.outputs.append(Output(Api, f"apis:{procedure.pk}:{spec.name}"[:200], {
                "procedure_id": procedure.pk, "name": spec.name[:200], "description": spec.description,
                "parameters": d["params"], "output_name": spec.output_name[:200],
                "output_type": spec.output_type[:200],
            }))
        return result

    return ctx.ask("apis", "A.3", key, messages, True, interpret, sample=index)


def _graph_reply(text: str, kind: str):
    # The model may wrap the graph in prose; keep the lines between <flow> and </flow> if present.
    m = re.search(r"<flow>(.*?)(</flow>|$)", text, re.DOTALL)
    return parse_graph_text(m.group(1) if m else text, kind=kind)


def run_flowgraph(ctx: Context, key: str, index: int, parent: str) -> ItemResult:
    procedure = Procedure.objects.get(pk=int(parent))
    specs = api_specs(procedure.pk)
    messages = prompts.render("A.4", procedure=procedure.text, apis=apis_json(specs))

    def interpret(reply: str) -> ItemResult:
        result = ItemResult(generated=1)
        try:
            g = _graph_reply(reply, "flowgraph")
        except GraphFormatError as exc:
            return result.discard(key, "unparseable_graph", str(exc), reply)
        violations = validate_flowgraph(g, [a.name for a in specs])
        if errors(violations):
            return discard_for_violations(result, key, violations, reply)
        result.passed = 1
        result.outputs.append(Output(Flowgraph, key, {
            "procedure_id": procedure.pk, "data": graph_to_json(g), "text": write_graph_text(g),
            "validation": violations_json(violations),
        }))
        return result

    return ctx.ask("flowgraph", "A.4", key, messages, False, interpret, sample=index)


def run_conversation_graph(ctx: Context, key: str, index: int, parent: str) -> ItemResult:
    fg = Flowgraph.objects.get(pk=int(parent))
    specs = api_specs(fg.procedure_id)
    g = graph_from_json(fg.data)
    mode = ctx.config.get("conversation_graph", "deterministic")

    def accept(cg, example: Any) -> ItemResult:
        result = ItemResult(generated=1)
        violations = validate_conversation_graph(cg, [a.name for a in specs])
        if errors(violations):
            return discard_for_violations(result, key, violations, example)
        result.passed = 1
        result.outputs.append(Output(ConversationGraph, key, {
            "flowgraph_id": fg.pk, "mode": mode, "data": graph_to_json(cg), "text": write_graph_text(cg),
            "noise_rate": 0.0, "noise_kinds": [], "validation": violations_json(violations),
        }))
        return result

    if mode != "llm":
        cg = flowgraph_to_conversation_graph(g)
        return accept(cg, write_graph_text(cg))

    def interpret(reply: str) -> ItemResult:
        try:
            cg = _graph_reply(reply, "conversation")
        except GraphFormatError as exc:
            return ItemResult(generated=1).discard(key, "unparseable_graph", str(exc), reply)
        return accept(cg, reply)

    messages = prompts.render("A.5", flowgraph=write_graph_text(g))
    return ctx.ask("conversation_graph", "A.5", key, messages, False, interpret, sample=index)

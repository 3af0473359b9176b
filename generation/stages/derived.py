"""The stages after the conversation graph: noise, paths, conversations (offline or LLM) and tests."""
from __future__ import annotations

import hashlib
import json
from typing import Any

from generation import prompts
from generation.models import Conversation, ConversationGraph, Origin, Procedure, SampledPath, Test
from generation.pipeline.audit import as_violations, audit_conversation
from generation.pipeline.dialogue_actions import answer_action, label_turns
from generation.pipeline.extract import ApiCallParseError, extract_tests
from generation.pipeline.formats import graph_from_json, graph_to_json, write_graph_text
from generation.pipeline.noise import add_noise
from generation.pipeline.realise import realise_conversation
from generation.pipeline.sampling import sample
from generation.pipeline.validate import errors, validate_conversation, validate_conversation_graph
from generation.stages.base import (
    Context,
    ItemResult,
    Output,
    api_specs,
    apis_json,
    content_seed,
    discard_for_violations,
    list_in,
    parse_json_reply,
    violations_json,
)

def case_fingerprint(context: Any, expected: Any) -> str:
    """Identity of a test for de-duplication: its context and expected output, nothing else."""
    text = json.dumps([context, expected], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def run_noise(ctx: Context, key: str, index: int, parent: str) -> ItemResult:
    source = ConversationGraph.objects.get(pk=int(parent))
    p = float(ctx.config.get("noise") or 0.0)
    noisy = add_noise(graph_from_json(source.data), p, seed=content_seed(ctx.seed, source.data))
    kinds = sorted({d["noise"] for _, d in noisy.nodes(data=True) if d.get("noise")})
    violations = validate_conversation_graph(noisy, [a.name for a in api_specs(source.flowgraph.procedure_id)])
    result = ItemResult(generated=1)
    if errors(violations):
        return discard_for_violations(result, key, violations, write_graph_text(noisy))
    result.passed = 1
    result.outputs.append(Output(ConversationGraph, key, {
        "flowgraph_id": source.flowgraph_id, "mode": source.mode, "data": graph_to_json(noisy),
        "text": write_graph_text(noisy), "noise_rate": p, "noise_kinds": kinds, "origin": Origin.DERIVED,
        "validation": violations_json(violations),
    }))
    return result


def run_paths(ctx: Context, key: str, index: int, parent: str) -> ItemResult:
    """Sample M paths of one graph; a job never stores two paths with the same node sequence.

    When the sampler returns repeats (the graph has fewer distinct paths than asked, or the
    sampler drew one twice), the repeats are dropped and the shortfall is a funnel note.
    """
    if ctx.config.get("gap_paths") is not None:  # i15: a gap-filling job writes its planned paths
        from generation.gaps import run_gap_paths
        return run_gap_paths(ctx, key, index, parent)
    cg = ConversationGraph.objects.get(pk=int(parent))
    m = int(ctx.config.get("paths") or 1)
    sampler = ctx.config.get("sampler") or "algorithm1"
    seed = content_seed(ctx.seed, cg.data)
    result = ItemResult()
    try:
        drawn = sample(graph_from_json(cg.data), m, sampler=sampler, seed=seed)
    except ValueError as exc:
        result.generated = m
        for i in range(m):
            result.discard(f"paths:{index}:{cg.pk}:{i}", "sampling_failed", str(exc))
        return result
    walks = drawn.paths
    if ctx.config.get("dedup") is False:  # the paper's Algorithm 1 as published: m walks, repeats kept
        from generation.pipeline.sampling import raw_walks

        walks = raw_walks(graph_from_json(cg.data), m, sampler=sampler, seed=seed)
    seen: set[tuple[str, ...]] = set()
    i = -1
    for path in walks:
        nodes = tuple(str(n) for n in path)
        if nodes in seen and ctx.config.get("dedup") is not False:
            continue
        seen.add(nodes)
        i += 1
        result.generated += 1
        result.passed += 1
        result.outputs.append(Output(SampledPath, f"paths:{index}:{cg.pk}:{i}", {
            "conversation_graph_id": cg.pk, "node_ids": list(nodes), "sampler": sampler,
            "seed": seed, "index": i, "origin": Origin.DERIVED,
        }))
    # i15: the sampler says when the graph has fewer distinct paths than asked, or when the coverage
    # sampler's cover needs more than --paths; both are funnel notes, not discards.
    if ctx.config.get("dedup") is False:
        if i + 1 > len(seen):
            result.notes["repeated_paths"] = i + 1 - len(seen)
    elif len(seen) < m:
        result.notes["fewer_distinct_paths"] = m - len(seen)
    elif len(seen) > m:
        result.notes["cover_needs_more_paths"] = len(seen) - m
    return result


def _conversation_reply(reply: str) -> list | None:
    messages = list_in(parse_json_reply(reply), "messages", "conversation")
    if messages is None or not all(isinstance(m, dict) for m in messages):
        return None
    out = []
    for m in messages:
        content = m.get("content")
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        out.append({"role": str(m.get("role", "")), "content": content})
    return out


def run_conversations(ctx: Context, key: str, index: int, parent: str) -> ItemResult:
    mode = ctx.config.get("conversations", "offline")
    fields: dict[str, Any]
    messages: list[dict] | None = None
    template = "A.6"
    if parent.startswith("p"):  # A.7: straight from the procedure
        procedure = Procedure.objects.get(pk=int(parent[1:]))
        specs = api_specs(procedure.pk)
        m = int(ctx.config.get("paths") or 1)
        messages = prompts.render("A.7", procedure=procedure.text, apis=apis_json(specs), variant=index % m + 1)
        template = "A.7"
        fields = {"procedure_id": procedure.pk, "path_id": None, "mode": Conversation.Mode.PROCEDURE,
                  "noise_kinds": []}
    else:
        # The drawings (svg) and the flowgraph's own graph are large text columns this item never reads.
        path = (SampledPath.objects.select_related("conversation_graph__flowgraph")
                .only("id", "index", "node_ids", "conversation_graph__data",
                      "conversation_graph__flowgraph__procedure_id")
                .get(pk=int(parent)))
        cg = path.conversation_graph
        g = graph_from_json(cg.data)
        procedure_id = cg.flowgraph.procedure_id
        specs = api_specs(procedure_id)
        kinds = sorted({g.nodes[n].get("noise") for n in path.node_ids if n in g and g.nodes[n].get("noise")})
        fields = {"procedure_id": procedure_id, "path_id": path.pk, "noise_kinds": kinds}
        if mode == "llm":
            messages = prompts.render("A.6", conversation_graph=write_graph_text(g), apis=apis_json(specs),
                                      path="[" + ", ".join(path.node_ids) + "]")
            fields["mode"] = Conversation.Mode.LLM
        else:
            convo = realise_conversation(g, path.node_ids, specs,
                                         seed=content_seed(ctx.seed, cg.data, path.node_ids, path.index))
            fields["mode"] = Conversation.Mode.OFFLINE
            fields["origin"] = Origin.DERIVED

    def interpret(reply: str) -> ItemResult:
        result = ItemResult(generated=1)
        try:
            convo = _conversation_reply(reply)
        except ValueError as exc:
            return result.discard(key, "invalid_json", str(exc), reply)
        if convo is None:
            return result.discard(key, "wrong_shape", "expected a list of {role, content} messages", reply)
        violations = validate_conversation(convo, specs)
        if fields.get("path_id"):  # i13: outcome consistency warnings (rule; the LLM check when config enables it)
            from generation.outcome_check import outcome_warnings
            violations += outcome_warnings(ctx.llm, ctx.config, key, g, path.node_ids, convo, specs)
        # i28: the fidelity audit. An LLM conversation that fails it goes through the repair loop like
        # any other finding; an offline one keeps its findings as warnings for the reviewers.
        on_path = bool(fields.get("path_id"))
        by_llm = fields["mode"] != Conversation.Mode.OFFLINE
        found = audit_conversation(convo, specs, g if on_path else None, path.node_ids if on_path else None)
        if not by_llm:  # the rule's CV-OUTCOME warning already says what AUDIT-OUTCOME would
            found = [f for f in found if f.kind != "outcome"]
        violations += as_violations(found, "error" if by_llm else "warning")
        if errors(violations):
            return discard_for_violations(result, key, violations, convo)
        result.passed = 1
        result.outputs.append(Output(Conversation, key, {**fields, "messages": convo,
                                                         "validation": violations_json(violations),
                                                         "turn_actions": label_turns(convo)}))
        return result

    if messages is None:
        return interpret(json.dumps(convo, ensure_ascii=False))
    return ctx.ask("conversations", template, key, messages, True, interpret, sample=index)


def test_fields(messages: list[dict]) -> list[dict[str, Any]]:
    """The Test rows a conversation's messages yield (without conversation and origin); raises
    ApiCallParseError when an API call cannot be read."""
    out = []
    for t in extract_tests(messages):
        e = t["expected"]
        fields = {"position": t["position"], "context": t["context"], "action": answer_action(t["context"], e)}
        if e["type"] == "api_call":
            fields.update(expected_type=Test.ExpectedType.API_CALL, expected_api_name=e["name"][:200],
                          expected_parameters=e["parameters"], expected_text="")
        else:
            fields.update(expected_type=Test.ExpectedType.REPLY, expected_text=e.get("content", ""),
                          expected_api_name="", expected_parameters={})
        fields["fingerprint"] = case_fingerprint(t["context"], e)
        out.append(fields)
    return out


def run_tests(ctx: Context, key: str, index: int, parent: str) -> ItemResult:
    convo = Conversation.objects.get(pk=int(parent))
    result = ItemResult()
    try:
        tests = test_fields(convo.messages)
    except ApiCallParseError as exc:
        result.generated = 1
        return result.discard(key, "unparseable_api_call", str(exc), convo.messages)
    for fields in tests:
        result.generated += 1
        result.passed += 1
        fields.update(conversation_id=convo.pk, origin=Origin.DERIVED)
        result.outputs.append(Output(Test, f"tests:{index}:{convo.pk}:{fields['position']}", fields))
    return result


def tests_reextract(conversation: Conversation) -> tuple[int, int]:
    """Replace a conversation's tests with those its current messages yield (after an edit):
    (tests removed, tests made). The new rows take the conversation's curation status as the
    cascade gives it to tests, and belong to no job (a job's keys and fingerprints stay its own).
    Frozen releases hold copies of their tests, so they do not change. Raises ApiCallParseError."""
    from generation.models import CurationStatus

    fields = test_fields(conversation.messages)
    status = {CurationStatus.ACCEPTED: CurationStatus.ACCEPTED, CurationStatus.PENDING: CurationStatus.PENDING}.get(
        conversation.status, CurationStatus.EXCLUDED)
    removed, _ = Test.objects.filter(conversation_id=conversation.pk).delete()
    Test.objects.bulk_create([Test(conversation_id=conversation.pk, origin=Origin.DERIVED, status=status, **f)
                              for f in fields])
    return removed, len(fields)

"""What each pipeline stage does for one work item: plan the items, then process one of them.

A work item is keyed `"<stage>:<index>:<parent>"` (parent = the pk of the row it starts from,
or `p<pk>` for A.7 items). Planning reads the previous stage's outputs in pk order, so the same
job plans the same keys every time. Processing calls the LLM or the pure pipeline *outside* any
transaction and returns an `ItemResult`: the rows to write (keyed, written with
`update_or_create`), the discards with their reasons, and the Table 1 counts. `services.item_run`
writes the result and marks the item done in one transaction.
"""
from __future__ import annotations

import json
import logging
import math
import re
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

from django.db import models as dj

from generation import llm, multi_api, prompts
from generation.models import (
    Api,
    Conversation,
    ConversationGraph,
    Flowgraph,
    GenerationJob,
    Intent,
    Origin,
    Procedure,
    SampledPath,
    Stage,
    Test,
)
from generation.pipeline.apis import ApiFormatError, ApiSpec, ParamSpec, api_to_dict, parse_api_list
from generation.pipeline.convert import flowgraph_to_conversation_graph
from generation.pipeline.dialogue_actions import answer_action, label_turns
from generation.pipeline.extract import ApiCallParseError, extract_tests
from generation.pipeline.formats import (
    GraphFormatError,
    graph_from_json,
    graph_to_json,
    parse_graph_text,
    write_graph_text,
)
from generation.pipeline.noise import add_noise
from generation.pipeline.realise import realise_conversation
from generation.pipeline.sampling import sample_paths
from generation.pipeline.validate import (
    errors,
    validate_conversation,
    validate_conversation_graph,
    validate_flowgraph,
)

logger = logging.getLogger(__name__)

STAGE_ORDER: list[str] = [s.value for s in Stage]
INTENT_BATCH = 10
MIN_PROCEDURE_CHARS = 40

# Default temperatures: variety where the paper wants diversity, determinism where it parses.
DEFAULT_TEMPERATURES = {
    "intents": 1.0, "procedures": 0.7, "apis": 0.0, "flowgraph": 0.0,
    "conversation_graph": 0.0, "conversations": 0.7,
}
JSON_FORMAT = {"type": "json_object"}


@dataclass
class Output:
    model: type[dj.Model]
    key: str
    fields: dict[str, Any]


@dataclass
class DiscardSpec:
    key: str
    reason: str
    detail: str = ""
    example: str = ""


@dataclass
class ItemResult:
    outcome: str = "passed"  # passed | discarded | failed | cancelled
    outputs: list[Output] = field(default_factory=list)
    discards: list[DiscardSpec] = field(default_factory=list)
    generated: int = 0
    passed: int = 0
    failed: int = 0

    @property
    def discarded(self) -> int:
        return len(self.discards) - self.failed

    def discard(self, key: str, reason: str, detail: str = "", example: Any = "") -> "ItemResult":
        text = example if isinstance(example, str) else json.dumps(example, ensure_ascii=False)
        self.discards.append(DiscardSpec(key, reason[:100], detail[:4000], (text or "")[:4000]))
        return self


def needs_llm(stage: str, config: dict) -> bool:
    if stage in ("intents", "procedures", "apis", "flowgraph"):
        return True
    if stage == "conversation_graph":
        return config.get("conversation_graph") == "llm"
    if stage == "conversations":
        return config.get("conversations") in ("llm", "procedure")
    return False


def stage_skipped_by_config(stage: str, config: dict) -> bool:
    """Stages that this configuration does not run at all."""
    if config.get("conversations") == "procedure" and stage in ("flowgraph", "conversation_graph", "noise", "paths"):
        return True
    if stage == "noise" and not config.get("noise"):
        return True
    return False


# --------------------------------------------------------------------------- helpers


def item_key(stage: str, index: int, parent: Any) -> str:
    return f"{stage}:{index}:{parent}"


def split_key(key: str) -> tuple[str, int, str]:
    stage, index, parent = key.split(":", 2)
    return stage, int(index), parent


def api_specs(procedure_id: int) -> list[ApiSpec]:
    out = []
    for a in Api.objects.filter(procedure_id=procedure_id).order_by("id"):
        out.append(ApiSpec(
            name=a.name, description=a.description,
            params=[ParamSpec(name=p.get("name", ""), type=p.get("type", "str"), required=p.get("required", True),
                              description=p.get("description", "")) for p in a.parameters],
            output_name=a.output_name, output_type=a.output_type,
        ))
    return out


def apis_json(specs: list[ApiSpec]) -> str:
    return json.dumps([api_to_dict(a) for a in specs], ensure_ascii=False)


_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def parse_json_reply(text: str | None) -> Any:
    """JSON from a model reply, tolerating code fences and prose around one object or list."""
    if not text or not text.strip():
        raise ValueError("empty reply")
    stripped = _FENCE.sub("", text.strip())
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as first:
        for open_, close in (("{", "}"), ("[", "]")):
            a, b = stripped.find(open_), stripped.rfind(close)
            if 0 <= a < b:
                try:
                    return json.loads(stripped[a:b + 1])
                except json.JSONDecodeError:
                    pass
        raise ValueError(f"invalid JSON at line {first.lineno} column {first.colno}: {first.msg}") from None


def list_in(data: Any, *names: str) -> list | None:
    """The list a reply carries: itself, under one of `names`, or the only list value of an object."""
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for name in names:
            if isinstance(data.get(name), list):
                return data[name]
        lists = [v for v in data.values() if isinstance(v, list)]
        if len(lists) == 1:
            return lists[0]
    return None


def content_seed(seed: int, *parts: Any) -> int:
    """A seed from the job seed and the item's content, not from row ids or task order.

    Rerunning the same job therefore samples the same paths and realises the same conversations
    (so a rerun's LLM prompts are identical and hit the cache), whatever order workers ran in.
    """
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return seed * 1_000_003 + zlib.crc32(text.encode()) % 1_000_003


def violations_json(violations) -> list[dict]:
    return [{"rule": v.rule, "where": v.where, "message": v.message, "severity": v.severity} for v in violations]


def discard_for_violations(result: ItemResult, key: str, violations, example: Any) -> ItemResult:
    errs = errors(violations)
    detail = "; ".join(f"{v.rule} at {v.where}: {v.message}" for v in errs[:10])
    return result.discard(key, errs[0].rule, detail, example)


class Context:
    """What a stage function needs from the job, without holding the row across LLM calls."""

    def __init__(self, job: GenerationJob) -> None:
        self.job = job
        self.config = job.config or {}
        self.seed = int(self.config.get("seed", 0))

    def llm(self, stage: str, template_id: str, key: str, messages: list[dict], json_mode: bool) -> str:
        cfg_models = self.config.get("models") or {}
        temps = {**DEFAULT_TEMPERATURES, **(self.config.get("temperatures") or {})}
        result = llm.chat(
            stage=stage, messages=messages, model=cfg_models.get(stage) or None,
            temperature=float(temps.get(stage, 0.0)), response_format=JSON_FORMAT if json_mode else None,
            job=self.job.pk, key=key, template=template_id, template_version=prompts.version_of(template_id),
        )
        return result.content or ""


# --------------------------------------------------------------------------- planning


def _inputs(job: GenerationJob, model: type[dj.Model], stage_of_model: str, **filters) -> dj.QuerySet:
    override = (job.config.get("input_ids") or {}).get(stage_of_model)
    if override is not None:
        return model.objects.filter(pk__in=override).order_by("pk")
    return model.objects.filter(job=job, **filters).order_by("pk")


def procedures_with_apis(job: GenerationJob) -> dj.QuerySet:
    override = (job.config.get("input_ids") or {}).get("apis")
    if override is not None:
        return Procedure.objects.filter(pk__in=override).order_by("pk")
    return Procedure.objects.filter(pk__in=Api.objects.filter(job=job).values("procedure_id")).order_by("pk")


def conversation_graphs_for_paths(job: GenerationJob) -> dj.QuerySet:
    if job.config.get("noise"):
        return _inputs(job, ConversationGraph, "noise", key__startswith="noise:")
    return _inputs(job, ConversationGraph, "conversation_graph", key__startswith="conversation_graph:")


def plan(job: GenerationJob, stage: str) -> list[str]:
    """The work-item keys of `stage`, from the previous stage's outputs (stable for a job)."""
    cfg = job.config
    if stage_skipped_by_config(stage, cfg):
        return []
    if stage == "intents":
        n = int(cfg.get("intents") or 0)
        return [item_key(stage, j, "batch") for j in range(math.ceil(n / INTENT_BATCH))]
    if stage == "procedures":
        k = int(cfg.get("procedures_per_intent") or 1)
        intents = _inputs(job, Intent, "intents").values_list("pk", flat=True)
        return [item_key(stage, i * k + v, pk) for i, pk in enumerate(intents) for v in range(k)]
    if stage == "apis":
        parents = _inputs(job, Procedure, "procedures").values_list("pk", flat=True)
    elif stage == "flowgraph":
        parents = procedures_with_apis(job).values_list("pk", flat=True)
    elif stage == "conversation_graph":
        parents = _inputs(job, Flowgraph, "flowgraph").values_list("pk", flat=True)
    elif stage == "noise":
        parents = _inputs(job, ConversationGraph, "conversation_graph",
                          key__startswith="conversation_graph:").values_list("pk", flat=True)
    elif stage == "paths":
        parents = conversation_graphs_for_paths(job).values_list("pk", flat=True)
    elif stage == "conversations":
        if cfg.get("conversations") == "procedure":
            m = int(cfg.get("paths") or 1)
            procs = procedures_with_apis(job).values_list("pk", flat=True)
            return [item_key(stage, i * m + v, f"p{pk}") for i, pk in enumerate(procs) for v in range(m)]
        parents = _inputs(job, SampledPath, "paths").values_list("pk", flat=True)
    elif stage == "tests":
        parents = _inputs(job, Conversation, "conversations").values_list("pk", flat=True)
    else:
        raise ValueError(f"unknown stage {stage!r}")
    return [item_key(stage, i, pk) for i, pk in enumerate(parents)]


# --------------------------------------------------------------------------- processing


def run_intents(ctx: Context, key: str, index: int, parent: str) -> ItemResult:
    total = int(ctx.config.get("intents") or 0)
    want = min(INTENT_BATCH, total - index * INTENT_BATCH)
    messages = prompts.render("A.1", number_issues=want, batch=index)
    reply = ctx.llm("intents", "A.1", key, messages, json_mode=True)
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
            result.discard(out_key, "intent_missing_field", "client, issue and name must be non-empty text", item)
            continue
        result.passed += 1
        result.outputs.append(Output(Intent, out_key, {
            "client": item["client"].strip()[:200], "issue": item["issue"].strip(), "name": item["name"].strip()[:200],
        }))
    return result


def run_procedures(ctx: Context, key: str, index: int, parent: str) -> ItemResult:
    intent = Intent.objects.get(pk=int(parent))
    k = int(ctx.config.get("procedures_per_intent") or 1)
    messages = prompts.render("A.2", client=intent.client, issue=intent.issue, name=intent.name,
                              variant=index % k + 1, variants=k)
    chain = multi_api.chain_for(ctx.config, index)
    messages = multi_api.with_chain_a2(messages, chain)
    text = ctx.llm("procedures", "A.2", key, messages, json_mode=False).strip()
    result = ItemResult(generated=1)
    if len(text) < MIN_PROCEDURE_CHARS:
        return result.discard(key, "procedure_too_short", f"{len(text)} characters (< {MIN_PROCEDURE_CHARS})", text)
    title = next((ln.lstrip("# ").strip() for ln in text.splitlines() if ln.strip()), "")[:300]
    result.passed = 1
    result.outputs.append(Output(Procedure, key, {"intent_id": intent.pk, "title": title, "text": text,
                                                  "api_chain": chain or {}}))
    return result


def run_apis(ctx: Context, key: str, index: int, parent: str) -> ItemResult:
    procedure = Procedure.objects.get(pk=int(parent))
    messages = prompts.render("A.3", procedure=procedure.text)
    messages = multi_api.with_chain_a3(messages, procedure.api_chain or None)
    reply = ctx.llm("apis", "A.3", key, messages, json_mode=True)
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
            "parameters": d["params"], "output_name": spec.output_name[:200], "output_type": spec.output_type[:200],
        }))
    return result


def _graph_reply(text: str, kind: str):
    # The model may wrap the graph in prose; keep the lines between <flow> and </flow> if present.
    m = re.search(r"<flow>(.*?)(</flow>|$)", text, re.DOTALL)
    return parse_graph_text(m.group(1) if m else text, kind=kind)


def run_flowgraph(ctx: Context, key: str, index: int, parent: str) -> ItemResult:
    procedure = Procedure.objects.get(pk=int(parent))
    specs = api_specs(procedure.pk)
    messages = prompts.render("A.4", procedure=procedure.text, apis=apis_json(specs))
    reply = ctx.llm("flowgraph", "A.4", key, messages, json_mode=False)
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


def run_conversation_graph(ctx: Context, key: str, index: int, parent: str) -> ItemResult:
    fg = Flowgraph.objects.get(pk=int(parent))
    specs = api_specs(fg.procedure_id)
    g = graph_from_json(fg.data)
    result = ItemResult(generated=1)
    mode = ctx.config.get("conversation_graph", "deterministic")
    if mode == "llm":
        messages = prompts.render("A.5", flowgraph=write_graph_text(g))
        reply = ctx.llm("conversation_graph", "A.5", key, messages, json_mode=False)
        try:
            cg = _graph_reply(reply, "conversation")
        except GraphFormatError as exc:
            return result.discard(key, "unparseable_graph", str(exc), reply)
        example: Any = reply
    else:
        cg = flowgraph_to_conversation_graph(g)
        example = write_graph_text(cg)
    violations = validate_conversation_graph(cg, [a.name for a in specs])
    if errors(violations):
        return discard_for_violations(result, key, violations, example)
    result.passed = 1
    result.outputs.append(Output(ConversationGraph, key, {
        "flowgraph_id": fg.pk, "mode": mode, "data": graph_to_json(cg), "text": write_graph_text(cg),
        "noise_rate": 0.0, "noise_kinds": [], "validation": violations_json(violations),
    }))
    return result


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
    cg = ConversationGraph.objects.get(pk=int(parent))
    m = int(ctx.config.get("paths") or 1)
    sampler = ctx.config.get("sampler") or "algorithm1"
    seed = content_seed(ctx.seed, cg.data)
    result = ItemResult()
    try:
        paths = sample_paths(graph_from_json(cg.data), m, sampler=sampler, seed=seed)
    except ValueError as exc:
        result.generated = m
        for i in range(m):
            result.discard(f"paths:{index}:{cg.pk}:{i}", "sampling_failed", str(exc))
        return result
    for i, path in enumerate(paths):
        result.generated += 1
        result.passed += 1
        result.outputs.append(Output(SampledPath, f"paths:{index}:{cg.pk}:{i}", {
            "conversation_graph_id": cg.pk, "node_ids": [str(n) for n in path], "sampler": sampler,
            "seed": seed, "index": i, "origin": Origin.DERIVED,
        }))
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
    result = ItemResult(generated=1)
    fields: dict[str, Any]
    if parent.startswith("p"):  # A.7: straight from the procedure
        procedure = Procedure.objects.get(pk=int(parent[1:]))
        specs = api_specs(procedure.pk)
        m = int(ctx.config.get("paths") or 1)
        messages = prompts.render("A.7", procedure=procedure.text, apis=apis_json(specs), variant=index % m + 1)
        reply = ctx.llm("conversations", "A.7", key, messages, json_mode=True)
        fields = {"procedure_id": procedure.pk, "path_id": None, "mode": Conversation.Mode.PROCEDURE,
                  "noise_kinds": []}
    else:
        path = SampledPath.objects.select_related("conversation_graph__flowgraph").get(pk=int(parent))
        cg = path.conversation_graph
        g = graph_from_json(cg.data)
        procedure_id = cg.flowgraph.procedure_id
        specs = api_specs(procedure_id)
        kinds = sorted({g.nodes[n].get("noise") for n in path.node_ids if n in g and g.nodes[n].get("noise")})
        fields = {"procedure_id": procedure_id, "path_id": path.pk, "noise_kinds": kinds}
        if mode == "llm":
            messages = prompts.render("A.6", conversation_graph=write_graph_text(g), apis=apis_json(specs),
                                      path="[" + ", ".join(path.node_ids) + "]")
            reply = ctx.llm("conversations", "A.6", key, messages, json_mode=True)
            fields["mode"] = Conversation.Mode.LLM
        else:
            convo = realise_conversation(g, path.node_ids, specs,
                                         seed=content_seed(ctx.seed, cg.data, path.node_ids, path.index))
            reply = json.dumps(convo, ensure_ascii=False)
            fields["mode"] = Conversation.Mode.OFFLINE
            fields["origin"] = Origin.DERIVED
    try:
        convo = _conversation_reply(reply)
    except ValueError as exc:
        return result.discard(key, "invalid_json", str(exc), reply)
    if convo is None:
        return result.discard(key, "wrong_shape", "expected a list of {role, content} messages", reply)
    violations = validate_conversation(convo, specs)
    if errors(violations):
        return discard_for_violations(result, key, violations, convo)
    result.passed = 1
    result.outputs.append(Output(Conversation, key, {**fields, "messages": convo,
                                                     "validation": violations_json(violations),
                                                     "turn_actions": label_turns(convo)}))
    return result


def run_tests(ctx: Context, key: str, index: int, parent: str) -> ItemResult:
    convo = Conversation.objects.get(pk=int(parent))
    result = ItemResult()
    try:
        tests = extract_tests(convo.messages)
    except ApiCallParseError as exc:
        result.generated = 1
        return result.discard(key, "unparseable_api_call", str(exc), convo.messages)
    for t in tests:
        e = t["expected"]
        result.generated += 1
        result.passed += 1
        fields = {"conversation_id": convo.pk, "position": t["position"], "context": t["context"],
                  "origin": Origin.DERIVED, "action": answer_action(t["context"], e)}
        if e["type"] == "api_call":
            fields.update(expected_type=Test.ExpectedType.API_CALL, expected_api_name=e["name"][:200],
                          expected_parameters=e["parameters"], expected_text="")
        else:
            fields.update(expected_type=Test.ExpectedType.REPLY, expected_text=e.get("content", ""),
                          expected_api_name="", expected_parameters={})
        result.outputs.append(Output(Test, f"tests:{index}:{convo.pk}:{t['position']}", fields))
    return result


RUNNERS: dict[str, Callable[[Context, str, int, str], ItemResult]] = {
    "intents": run_intents,
    "procedures": run_procedures,
    "apis": run_apis,
    "flowgraph": run_flowgraph,
    "conversation_graph": run_conversation_graph,
    "noise": run_noise,
    "paths": run_paths,
    "conversations": run_conversations,
    "tests": run_tests,
}


def process(job: GenerationJob, key: str) -> ItemResult:
    """Run one work item. LLM failures become a recorded discard, never an exception."""
    stage, index, parent = split_key(key)
    try:
        return RUNNERS[stage](Context(job), key, index, parent)
    except llm.LLMUnavailable as exc:
        return ItemResult(outcome="failed", generated=1, failed=1).discard(key, "llm_unavailable", str(exc))
    except llm.LLMFailed as exc:
        return ItemResult(outcome="failed", generated=1, failed=1).discard(key, "llm_failed", str(exc))
    except Exception as exc:  # noqa: BLE001 - a bug in one item must not stall the whole job
        logger.exception("generation item %s failed", key)
        return ItemResult(outcome="failed", generated=1, failed=1).discard(
            key, "stage_error", f"{type(exc).__name__}: {exc}")

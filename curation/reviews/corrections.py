"""Adjudicators correct a flowgraph, conversation graph or conversation (issue #31 item 5).

A correction keeps the artifact's id (its review item, reviews and lineage stay linked) and stores
every version's content in ArtifactVersion: version 1 is the content as generated, saved on the
first edit. The same validators generation runs decide what may be saved (error findings refuse
the save; the page shows them live through :func:`check`). For graphs the descendants are marked:
a text-only edit asks for them to be reviewed again, a structural edit (nodes or edges added or
removed, a type or an API changed) asks for them to be regenerated.

"Review again" changes no review state: the item keeps its reviews and place, and the review page
and the queue tell annotators. "Regenerate" withholds the marked items (the explorer's exclusion,
audited): they are built from a structure that no longer exists, so they are Excluded — never
offered, their claims closed, not counted as open, never released — and "Include again" refuses
them; an admin regenerates below the corrected graph instead (a real generation job). A corrected
conversation's tests are extracted again from the new version (frozen releases keep their copies).
"""
from __future__ import annotations

from typing import Any

from django.db import transaction

from almita_web.roles import ADJUDICATOR, ADMIN, user_roles
from curation.models import (
    ArtifactVersion,
    AuditEvent,
    ChangeKind,
    CorrectionMark,
    ItemState,
    MarkKind,
    ReviewItem,
    ReviewStage,
)
from curation.reviews.lineage import STAGE_MODELS, _children, _has_warnings, cascade_apply
from generation.drawings import graphs_stored
from generation.models import Conversation, ConversationGraph, Flowgraph
from generation.pipeline.extract import ApiCallParseError
from generation.pipeline.formats import GraphFormatError, graph_from_json, write_graph_text
from generation.pipeline.validate import validate_conversation, validate_conversation_graph, validate_flowgraph
from generation.stages.base import api_specs

EDITABLE = (ReviewStage.FLOWGRAPH, ReviewStage.CONVERSATION_GRAPH, ReviewStage.CONVERSATION)
GRAPH_STAGES = (ReviewStage.FLOWGRAPH, ReviewStage.CONVERSATION_GRAPH)
MAX_ROWS = 500
MAX_TEXT = 4000
NODE_TYPES = {ReviewStage.FLOWGRAPH: ["start_message", "message", "api", "end_message"],
              ReviewStage.CONVERSATION_GRAPH: ["assistant", "user", "api"]}
ROLES = ["user", "assistant", "api", "api_output"]


class CorrectionError(ValueError):
    """Input or permission problem, said in one short sentence for the page."""


def refusal(user, item: ReviewItem) -> str:
    """Why `user` may not correct `item` ("" when they may). Admins may correct any editable item
    that is in curation; adjudicators those they may adjudicate, once every review is in."""
    if item.stage not in EDITABLE:
        return "Only flowgraphs, conversation graphs and conversations can be corrected here."
    if item.excluded:
        if item.withheld and regenerate_marked(item.stage, item.object_id):
            return "A structural correction above marked this item for regeneration: regenerate below that graph instead."
        return "A rejected ancestor put this item out of curation: correct the ancestor instead."
    roles = user_roles(user)
    if ADMIN in roles:
        return ""
    from curation.reviews.services import may_adjudicate

    if ADJUDICATOR not in roles:
        return "Only adjudicators and admins correct items."
    if item.state == ItemState.OPEN:
        return "This item still waits for its reviews."
    if not may_adjudicate(user, item):
        return "You reviewed this item yourself; another adjudicator may correct it."
    return ""


def may_correct(user, item: ReviewItem) -> bool:
    return not refusal(user, item)


def _procedure_id(stage: str, artifact) -> int:
    if stage == ReviewStage.FLOWGRAPH:
        return artifact.procedure_id
    if stage == ReviewStage.CONVERSATION_GRAPH:
        return artifact.flowgraph.procedure_id
    return artifact.procedure_id


def current_content(stage: str, artifact) -> dict[str, Any]:
    if stage == ReviewStage.CONVERSATION:
        return {"messages": [{"role": str(m.get("role", "")), "content": str(m.get("content", ""))}
                             for m in (artifact.messages or []) if isinstance(m, dict)]}
    data = artifact.data if isinstance(artifact.data, dict) else {}
    return {"kind": data.get("kind") or ("flowgraph" if stage == ReviewStage.FLOWGRAPH else "conversation"),
            "nodes": [dict(n) for n in data.get("nodes", [])], "edges": [dict(e) for e in data.get("edges", [])]}


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise CorrectionError(f"{where}: expected text.")
    value = str(value)
    if len(value) > MAX_TEXT:
        raise CorrectionError(f"{where}: at most {MAX_TEXT} characters.")
    return value.replace("\r\n", "\n")


def clean(stage: str, payload: Any) -> dict[str, Any]:
    """The submitted rows in the stored shape, or CorrectionError naming the bad row."""
    if not isinstance(payload, dict):
        raise CorrectionError("Expected an object with the rows.")
    if stage == ReviewStage.CONVERSATION:
        turns = payload.get("messages")
        if not isinstance(turns, list) or len(turns) > MAX_ROWS:
            raise CorrectionError(f"'messages' must be a list of at most {MAX_ROWS} turns.")
        out = []
        for i, t in enumerate(turns):
            if not isinstance(t, dict):
                raise CorrectionError(f"Turn {i + 1}: expected role and content.")
            out.append({"role": _text(t.get("role"), f"Turn {i + 1} role").strip(),
                        "content": _text(t.get("content"), f"Turn {i + 1} content")})
        return {"messages": out}
    nodes, edges = payload.get("nodes"), payload.get("edges")
    if not isinstance(nodes, list) or not isinstance(edges, list) or len(nodes) > MAX_ROWS or len(edges) > MAX_ROWS:
        raise CorrectionError(f"'nodes' and 'edges' must be lists of at most {MAX_ROWS} rows.")
    kind = "flowgraph" if stage == ReviewStage.FLOWGRAPH else "conversation"
    clean_nodes, clean_edges = [], []
    for i, n in enumerate(nodes):
        if not isinstance(n, dict):
            raise CorrectionError(f"Node row {i + 1}: expected id, type and text.")
        clean_nodes.append({"id": _text(n.get("id"), f"Node row {i + 1} id").strip(),
                            "type": _text(n.get("type"), f"Node row {i + 1} type").strip(),
                            "label": _text(n.get("label"), f"Node row {i + 1} text")})
        if n.get("noise"):
            clean_nodes[-1]["noise"] = _text(n.get("noise"), f"Node row {i + 1} noise")
    for i, e in enumerate(edges):
        if not isinstance(e, dict):
            raise CorrectionError(f"Edge row {i + 1}: expected source, target and label.")
        clean_edges.append({"id": _text(e.get("id"), f"Edge row {i + 1} id").strip(),
                            "source": _text(e.get("source"), f"Edge row {i + 1} source").strip(),
                            "target": _text(e.get("target"), f"Edge row {i + 1} target").strip(),
                            "label": _text(e.get("label"), f"Edge row {i + 1} label")})
    return {"kind": kind, "nodes": clean_nodes, "edges": clean_edges}


def _finding(rule: str, where: str, message: str, severity: str = "error") -> dict[str, str]:
    return {"rule": rule, "where": where, "message": message, "severity": severity}


def check(stage: str, content: dict[str, Any], procedure_id: int) -> list[dict[str, str]]:
    """The generation validators' findings for this content, as the page lists them."""
    specs = api_specs(procedure_id)
    if stage == ReviewStage.CONVERSATION:
        found = validate_conversation(content["messages"], specs)
    else:
        try:
            g = graph_from_json(content)
        except GraphFormatError as exc:
            return [_finding("FORMAT", "graph", str(exc))]
        validator = validate_flowgraph if stage == ReviewStage.FLOWGRAPH else validate_conversation_graph
        found = validator(g, [a.name for a in specs])
    return [_finding(v.rule, v.where, v.message, v.severity) for v in found]


def change_kind(stage: str, old: dict[str, Any], new: dict[str, Any]) -> str:
    """text when only wording changed; structure when rows, types, links or API names did."""
    if stage == ReviewStage.CONVERSATION:
        same = [t["role"] for t in old["messages"]] == [t["role"] for t in new["messages"]]
        return ChangeKind.TEXT if same else ChangeKind.STRUCTURE

    def shape(c):
        nodes = {n["id"]: (n.get("type"), n.get("label") if n.get("type") == "api" else None) for n in c["nodes"]}
        return nodes, {(e["source"], e["target"]) for e in c["edges"]}
    return ChangeKind.TEXT if shape(old) == shape(new) else ChangeKind.STRUCTURE


def descendants(stage: str, object_id: int) -> list[tuple[str, int]]:
    """Every reviewable artifact below this one, parents before children."""
    out: list[tuple[str, int]] = []
    frontier = [(stage, [object_id])]
    while frontier:
        s, ids = frontier.pop(0)
        for child_stage, child_ids in _children(s, ids):
            if child_ids:
                out += [(child_stage, i) for i in child_ids]
                frontier.append((child_stage, child_ids))
    return out


def load(item: ReviewItem):
    model = STAGE_MODELS[item.stage]
    related = {ReviewStage.CONVERSATION_GRAPH: ["flowgraph"]}.get(item.stage, [])
    artifact = model.objects.select_related(*related).filter(pk=item.object_id).first()
    if artifact is None:
        raise CorrectionError("The artifact behind this item no longer exists.")
    return artifact


@transaction.atomic
def correct(*, editor, item_id: int, payload: Any, note: str) -> ArtifactVersion:
    """Store the edited content as a new version of the item's artifact; mark its descendants."""
    item = ReviewItem.objects.select_for_update().filter(pk=item_id).first()
    if item is None:
        raise CorrectionError("No such review item.")
    refused = refusal(editor, item)
    if refused:
        raise CorrectionError(refused)
    note = _text(note, "Note").strip()
    if not note:
        raise CorrectionError("Write a note saying what you corrected.")
    artifact = load(item)
    old = current_content(item.stage, artifact)
    new = clean(item.stage, payload)
    if new == old:
        raise CorrectionError("Nothing changed.")
    findings = check(item.stage, new, _procedure_id(item.stage, artifact))
    refused = [f for f in findings if f["severity"] == "error"]
    if refused:
        first = refused[0]
        raise CorrectionError(f"{len(refused)} validator finding(s) must be fixed first, e.g. "
                              f"{first['rule']} {first['where']}: {first['message']}.")
    kind = change_kind(item.stage, old, new)
    versions = ArtifactVersion.objects.filter(stage=item.stage, object_id=item.object_id)
    last = versions.order_by("-number").first()
    if last is None:
        last = ArtifactVersion.objects.create(stage=item.stage, object_id=item.object_id, number=1, content=old,
                                              change=ChangeKind.ORIGINAL, created_at=artifact.created_at)
    version = ArtifactVersion.objects.create(stage=item.stage, object_id=item.object_id, number=last.number + 1,
                                             content=new, previous=last, editor=editor, note=note, change=kind)
    warnings = [f for f in findings if f["severity"] != "error"]
    tests = {}
    if item.stage == ReviewStage.CONVERSATION:
        Conversation.objects.filter(pk=artifact.pk).update(messages=new["messages"], validation=warnings)
        from generation.stages.derived import tests_reextract

        artifact.messages = new["messages"]
        try:
            removed, made = tests_reextract(artifact)
        except ApiCallParseError as exc:
            raise CorrectionError(f"The tests cannot be extracted from this version: {exc}") from exc
        tests = {"tests_removed": removed, "tests_made": made}
    else:
        model = Flowgraph if item.stage == ReviewStage.FLOWGRAPH else ConversationGraph
        _store_graph(model, artifact, new, warnings)
    ReviewItem.objects.filter(pk=item.pk).update(has_warnings=_has_warnings(warnings), corrected=True)
    marks = []
    if item.stage in GRAPH_STAGES:
        mark = MarkKind.REVIEW if kind == ChangeKind.TEXT else MarkKind.REGENERATE
        marks = [CorrectionMark(version=version, stage=s, object_id=i, kind=mark)
                 for s, i in descendants(item.stage, item.object_id)]
        CorrectionMark.objects.bulk_create(marks, batch_size=500)
        for stage in {m.stage for m in marks}:  # their pages tell annotators (correction_notices)
            ReviewItem.objects.filter(stage=stage, object_id__in=[m.object_id for m in marks if m.stage == stage],
                                      corrected=False).update(corrected=True)
    AuditEvent.objects.create(actor=editor, action=AuditEvent.Action.CORRECT, item=item,
                              before={"version": last.number},
                              after={"version": version.number, "change": kind, "note": note,
                                     "descendants_marked": len(marks),
                                     "mark": marks[0].kind if marks else "", **tests})
    if marks and marks[0].kind == MarkKind.REGENERATE:
        _withhold_marked(editor, item)
    return version


def _withhold_marked(editor, item: ReviewItem) -> None:
    """Withhold the review items below a structurally corrected graph (they wait to be regenerated),
    then let the cascade exclude them and close their claims, parents first."""
    targets = descendants(item.stage, item.object_id)
    q = ReviewItem.objects.none()
    for stage in {s for s, _ in targets}:
        q |= ReviewItem.objects.filter(stage=stage, object_id__in=[i for s, i in targets if s == stage])
    q.filter(withheld=False).update(withheld=True)  # one table: `withheld` stays in the UPDATE's own WHERE
    children = {(s, i) for s, ids in _children(item.stage, [item.object_id]) for i in ids}
    for child in q.order_by("id"):
        if (child.stage, child.object_id) in children:
            cascade_apply(child, editor)
    for rest in q.filter(excluded=False).order_by("id"):  # a marked item whose parent has no item
        cascade_apply(rest, editor)


def regenerate_marked(stage: str, object_id: int) -> bool:
    """Whether a structural correction above this artifact asks for it to be regenerated."""
    return CorrectionMark.objects.filter(stage=stage, object_id=object_id, kind=MarkKind.REGENERATE).exists()


def _store_graph(model, artifact, new: dict[str, Any], warnings: list) -> None:
    """Write the corrected graph with its text; its drawing is the worker's (queued when the
    transaction commits; the page shows "Drawing…" until it arrives): no Graphviz in the request."""
    model.objects.filter(pk=artifact.pk).update(data=new, text=write_graph_text(graph_from_json(new)), svg="",
                                                validation=warnings)
    graphs_stored(model, [artifact.pk])


def history(item: ReviewItem) -> list[ArtifactVersion]:
    return list(ArtifactVersion.objects.filter(stage=item.stage, object_id=item.object_id)
                .select_related("editor").order_by("number"))


def version_seen(versions: list[ArtifactVersion], at) -> int:
    """The version a review written at `at` saw (1 when the artifact was never corrected)."""
    seen = 1
    for v in versions:
        if v.number > 1 and v.created_at <= at:
            seen = v.number
    return seen


def marks_on(stage: str, object_id: int) -> list[CorrectionMark]:
    """Corrections above this artifact that ask for it to be reviewed again or regenerated."""
    return list(CorrectionMark.objects.filter(stage=stage, object_id=object_id)
                .select_related("version").order_by("-id")[:20])


def marked_below(version_ids: list[int]) -> list[dict[str, Any]]:
    """The descendants the given versions marked, with their review item ids for links."""
    marks = list(CorrectionMark.objects.filter(version_id__in=version_ids).order_by("id")[:500])
    items = {(i.stage, i.object_id): i.pk for i in ReviewItem.objects.filter(
        object_id__in={m.object_id for m in marks}, stage__in={m.stage for m in marks})}
    return [{"mark": m, "item_id": items.get((m.stage, m.object_id)),
             "stage_label": ReviewStage(m.stage).label} for m in marks]


def regenerate_below(*, user, item_id: int):
    """Admins: a generation job that builds again what a structural correction marked: below a
    flowgraph, the conversation graph and conversations (deterministic converter); below a
    conversation graph, paths sampled again from the stored graph, then conversations and tests.
    Offline conversations: no LLM needed."""
    from generation.models import SampledPath
    from generation.services import JobConfigError, job_create

    if ADMIN not in user_roles(user):
        raise CorrectionError("Only admins start generation jobs.")
    item = ReviewItem.objects.filter(pk=item_id).first()
    if item is None:
        raise CorrectionError("No such review item.")
    if item.stage not in GRAPH_STAGES:
        raise CorrectionError("Regeneration starts at a corrected flowgraph or conversation graph.")
    label = ReviewStage(item.stage).label.lower()
    versions = ArtifactVersion.objects.filter(stage=item.stage, object_id=item.object_id)
    if not CorrectionMark.objects.filter(version__in=versions, kind=MarkKind.REGENERATE).exists():
        raise CorrectionError(f"No structural correction of this {label} asks for regeneration.")
    config = {"conversations": "offline"}
    if item.stage == ReviewStage.FLOWGRAPH:
        paths = SampledPath.objects.filter(conversation_graph__flowgraph_id=item.object_id)
        config["conversation_graph"] = "deterministic"
    else:
        paths = SampledPath.objects.filter(conversation_graph_id=item.object_id)
    config["paths"] = min(20, max(1, paths.count()))
    try:
        job = job_create(config=config, existing=item.stage, existing_ids=[item.object_id], created_by=user,
                         name=f"Regenerate below corrected {label} {item.object_id}")
    except JobConfigError as exc:
        raise CorrectionError(str(exc)) from exc
    AuditEvent.objects.create(actor=user, action=AuditEvent.Action.CORRECT, item=item, before={},
                              after={"regenerate_job": job.pk})
    return job

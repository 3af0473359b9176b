"""What the review and adjudication pages show of an item: its artifact, lineage and graphs.

A graph's drawing is made by the worker when the graph is stored (generation.drawings) and read
from the row's ``svg`` field; for a graph the worker has not drawn yet the page queues the drawing
once and shows "Drawing…", which polls until it arrives (generation.drawing_cache): no request
runs Graphviz.
A conversation's path is highlighted in the browser on its graph's stored drawing (the figure's
``data-path``, static/js/graph.js): no drawing is made for a conversation. Graphviz escapes every
label, so the markup is inlined as is.
"""
from __future__ import annotations

import functools
import json
from typing import Any

from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from curation.guidance.services import current_guide, human_codes, reason_codes, rule_codes
from curation.models import ReviewItem, ReviewStage
from curation.reviews.lineage import artifact_for
from generation.drawing_cache import graph_drawing_for
from generation.models import Api, ConversationGraph, Flowgraph, Procedure
from generation.pipeline.render import HIGHLIGHT_COLOUR


def cached_svg(row: Flowgraph | ConversationGraph) -> dict[str, Any]:
    """The row's stored drawing: {"svg", "error", "pending", "kind", "key"} (pending: queued for
    the worker, the page polls for it)."""
    got = graph_drawing_for(row)
    return {**got, "svg": mark_safe(got["svg"])}  # noqa: S308 - Graphviz escapes every label


def stage_fragments(stage: str, can_review: bool) -> dict[str, Any]:
    """The review page's parts that depend on the stage and its guideline version alone."""
    guide, version = current_guide(stage)
    from projects.context import current_project_id

    return {**_fragments(stage, can_review, version, guide, current_project_id()), "guideline_version": version}


@functools.lru_cache(maxsize=64)
def _fragments(stage: str, can_review: bool, version: int, guide, _project_id: int | None) -> dict[str, str]:
    # Rendered once per process and guideline version (autoescaped as ever; guideline Markdown
    # is sanitised): they were half the review page's template time.
    ctx = {"guide": guide, "version": version, "reason_codes": reason_codes(stage, guide),
           "human_codes": human_codes(stage, guide), "rule_codes": rule_codes(stage), "can_review": can_review}
    return {"guidelines": render_to_string("curation/_guidelines.html", ctx),
            "reason_fields": render_to_string("curation/_reason_fields.html", ctx)}


def _turns(messages: list, cg_data: dict | None, path_nodes: list) -> list[dict[str, Any]]:
    from curation.guidance.services import align_turns

    # Node types straight from the stored JSON: building the networkx graph cost more than the page.
    nodes = (cg_data or {}).get("nodes") if isinstance(cg_data, dict) else None
    types = {str(n.get("id")): str(n.get("type", "")) for n in nodes or [] if isinstance(n, dict)}
    aligned = align_turns(messages, path_nodes, types) if types else [None] * len(messages)
    return [{"index": i, "role": m.get("role", ""), "content": m.get("content", ""), "node": aligned[i] or ""}
            for i, m in enumerate(messages) if isinstance(m, dict)]


def _apis(procedure: Procedure) -> list[Api]:
    return list(Api.objects.filter(procedure_id=procedure.pk).order_by("name", "id"))


def turns_with_actions(messages: list, actions: list | None) -> list:
    """Each message with its ToolDial dialogue action (stored, or labelled now for older rows)."""
    from generation.pipeline.dialogue_actions import label_turns

    if not isinstance(actions, list) or len(actions) != len(messages or []):
        actions = label_turns(messages or [])
    return [dict(m, action=a) if isinstance(m, dict) else m for m, a in zip(messages or [], actions)]


def item_context(item: ReviewItem) -> dict[str, Any]:
    artifact = artifact_for(item)
    guide, version = current_guide(item.stage)
    ctx: dict[str, Any] = {
        "item": item, "artifact": artifact, "guide": guide, "guideline_version": version,
        "reason_codes": reason_codes(item.stage, guide), "graphs": [], "procedure": None, "apis": [],
        "turns": [], "warnings": list(getattr(artifact, "validation", None) or []),
    }
    if artifact is None:
        return ctx
    if item.stage == ReviewStage.PROCEDURE:
        procedure = artifact
        for api in _apis(procedure):
            ctx["warnings"] += [dict(w, where=f"API {api.name}: {w.get('where', '')}") for w in api.validation or []
                                if isinstance(w, dict)]
    elif item.stage == ReviewStage.FLOWGRAPH:
        procedure = artifact.procedure
        ctx["graphs"].append({"title": "Flowgraph", **cached_svg(artifact), "flaggable": True, "secondary": False})
    elif item.stage == ReviewStage.CONVERSATION_GRAPH:
        procedure = artifact.flowgraph.procedure
        ctx["graphs"].append({"title": "Conversation graph", **cached_svg(artifact), "flaggable": True, "secondary": False})
        ctx["graphs"].append({"title": "Its flowgraph", **cached_svg(artifact.flowgraph), "secondary": True})
    else:
        procedure = artifact.procedure
        cg_data, path_nodes = None, []
        if artifact.path_id:
            cg = artifact.path.conversation_graph
            cg_data, path_nodes = cg.data, list(artifact.path.node_ids)
            ctx["path"] = artifact.path
            ctx["graphs"].append({"title": "Conversation graph · this path highlighted", **cached_svg(cg),
                                  "flaggable": True, "path": json.dumps([str(n) for n in path_nodes]),
                                  "path_colour": HIGHLIGHT_COLOUR})
        ctx["turns"] = _turns(artifact.messages or [], cg_data, path_nodes)
        labelled = turns_with_actions(artifact.messages or [], artifact.turn_actions)  # #17: ToolDial actions
        for t in ctx["turns"]:
            t["action"] = labelled[t["index"]].get("action")
    ctx["procedure"] = procedure
    ctx["apis"] = _apis(procedure)
    return ctx

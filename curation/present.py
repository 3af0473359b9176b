"""What the review and adjudication pages show of an item: its artifact, lineage and graphs.

SVG comes from the pipeline's one renderer (``generation.pipeline.render.to_svg``) and is cached on
the row's ``svg`` field; a conversation's graph with its path highlighted is cached in Django's
cache (shared by all processes, see settings.CACHES), keyed by both rows. Graphviz escapes every
label, so the markup is inlined as is.
"""
from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from django.core.cache import cache
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from curation.guidelines import GUIDES, reason_codes
from curation.lineage import artifact_for
from curation.models import ReviewItem, ReviewStage
from generation.models import Api, ConversationGraph, Flowgraph, Procedure
from generation.pipeline.formats import GraphFormatError, graph_from_json
from generation.pipeline.render import GraphvizMissing, to_svg


def _render(data: dict, highlight: list | None = None) -> tuple[str, str]:
    """(svg, error) for a graph stored as graph_to_json data."""
    try:
        return to_svg(graph_from_json(data), highlight_path=highlight), ""
    except GraphvizMissing as exc:
        return "", str(exc)
    except GraphFormatError as exc:
        return "", f"The stored graph could not be read: {exc}"
    except Exception as exc:  # dot failed or timed out: show the reason, keep the page usable
        return "", f"The graph could not be drawn: {exc}"


def cached_svg(row: Flowgraph | ConversationGraph) -> dict[str, Any]:
    if not row.svg:
        svg, error = _render(row.data)
        if error:
            return {"svg": "", "error": error}
        row.svg = svg
        type(row).objects.filter(pk=row.pk).update(svg=svg)
    return {"svg": mark_safe(row.svg), "error": ""}


def highlighted_svg(cg: ConversationGraph, path_nodes: list, conversation_id: int) -> dict[str, Any]:
    # The cache outlives the database (a file cache shared by all processes): the row's creation
    # time and the path itself are in the key, so a reused primary key never finds an old drawing.
    path_digest = hashlib.sha256(json.dumps([str(n) for n in path_nodes]).encode()).hexdigest()[:16]
    key = f"curation:svg:cg{cg.pk}:{cg.created_at.timestamp():.6f}:cv{conversation_id}:{path_digest}"
    svg = cache.get(key)
    if svg is None:
        svg, error = _render(cg.data, highlight=list(path_nodes))
        if error:
            return {"svg": "", "error": error}
        cache.set(key, svg, 24 * 3600)
    return {"svg": mark_safe(svg), "error": ""}


@functools.cache
def stage_fragments(stage: str, can_review: bool) -> dict[str, str]:
    """The review page's parts that depend on the stage alone: its guidelines and reason codes.

    They come from constants (curation.guidelines), so each process renders them once (autoescaped
    as ever); they were half the review page's template time.
    """
    ctx = {"guide": GUIDES[stage], "reason_codes": reason_codes(stage), "can_review": can_review}
    return {"guidelines": render_to_string("curation/_guidelines.html", ctx),
            "reason_fields": render_to_string("curation/_reason_fields.html", ctx)}


def _apis(procedure: Procedure) -> list[Api]:
    # Plain SQL, like curation.queue: on every review page, and the ORM spent a millisecond compiling it.
    sql = f"SELECT * FROM {Api._meta.db_table} WHERE procedure_id = %s ORDER BY name, id"
    return list(Api.objects.raw(sql, [procedure.pk]))


def turns_with_actions(messages: list, actions: list | None) -> list:
    """Each message with its ToolDial dialogue action (stored, or labelled now for older rows)."""
    from generation.pipeline.dialogue_actions import label_turns

    if not isinstance(actions, list) or len(actions) != len(messages or []):
        actions = label_turns(messages or [])
    return [dict(m, action=a) if isinstance(m, dict) else m for m, a in zip(messages or [], actions)]


def item_context(item: ReviewItem) -> dict[str, Any]:
    artifact = artifact_for(item)
    ctx: dict[str, Any] = {
        "item": item, "artifact": artifact, "guide": GUIDES[item.stage],
        "reason_codes": reason_codes(item.stage), "graphs": [], "procedure": None, "apis": [],
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
        ctx["graphs"].append({"title": "Flowgraph", **cached_svg(artifact)})
    elif item.stage == ReviewStage.CONVERSATION_GRAPH:
        procedure = artifact.flowgraph.procedure
        ctx["graphs"].append({"title": "Conversation graph", **cached_svg(artifact)})
        ctx["graphs"].append({"title": "Its flowgraph", **cached_svg(artifact.flowgraph), "secondary": True})
    else:
        procedure = artifact.procedure
        ctx["turns"] = turns_with_actions(artifact.messages, artifact.turn_actions)
        if artifact.path_id:
            cg = artifact.path.conversation_graph
            ctx["path"] = artifact.path
            ctx["graphs"].append({"title": "Conversation graph, this conversation's path highlighted",
                                  **highlighted_svg(cg, artifact.path.node_ids, artifact.pk)})
    ctx["procedure"] = procedure
    ctx["apis"] = _apis(procedure)
    return ctx

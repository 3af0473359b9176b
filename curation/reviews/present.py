"""What the review and adjudication pages show of an item: its artifact, lineage and graphs.

SVG comes from the pipeline's one renderer (``generation.pipeline.render.to_svg``) and is cached on
the row's ``svg`` field; a conversation's graph with its path highlighted is cached in Django's
cache (shared by all processes, see settings.CACHES), keyed by both rows. Graphviz escapes every
label, so the markup is inlined as is.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import threading
import time
from typing import Any

from django.core.cache import cache
from django.db import connection, transaction
from django.template.loader import render_to_string
from django.utils.html import escape
from django.utils.safestring import mark_safe

from almita_web.prepared import execute as prepared_execute
from almita_web.rows import fetch
from curation.guidance.services import current_guide, human_codes, reason_codes, rule_codes
from curation.models import ReviewItem, ReviewStage
from curation.reviews.artifacts import DRAWN_MARK, DRAWN_WITHIN, drawn_sql
from curation.reviews.lineage import artifact_for
from generation.models import Api, ConversationGraph, Flowgraph, Procedure
from generation.pipeline import graphviz_lib
from generation.pipeline.formats import GraphFormatError, graph_from_json
from generation.pipeline.render import GraphvizMissing, scope_svg_ids, to_svg_readable


def _render(data: dict, highlight: list | None = None) -> tuple[str, str]:
    """(svg, error) for a graph stored as graph_to_json data.

    The root element carries ``data-nodes``: the node ids in the renderer's order (Graphviz names
    node i ``n<i>``), so the page script maps a drawn node back to its id; escaped as an attribute.
    ``data-layout`` says which direction the graph's shape chose (``to_svg_readable``); it comes
    first, and is the mark of a current drawing (``artifacts.DRAWN_MARK``).
    """
    try:
        g = graph_from_json(data)
        svg, rankdir = to_svg_readable(g, highlight_path=highlight)
        names = escape(json.dumps([str(n) for n in g.nodes]))
        return svg.replace("<svg", f'<svg data-layout="{rankdir}" data-nodes="{names}"', 1), ""
    except GraphvizMissing as exc:
        return "", str(exc)
    except GraphFormatError as exc:
        return "", f"The stored graph could not be read: {exc}"
    except Exception as exc:  # dot failed or timed out: show the reason, keep the page usable
        return "", f"The graph could not be drawn: {exc}"


def _drawn(svg: str) -> bool:
    # (drawings made before the node map are redrawn; artifact_rows asks the same in SQL)
    return bool(svg) and DRAWN_MARK in svg[:DRAWN_WITHIN]


def cached_svg(row: Flowgraph | ConversationGraph) -> dict[str, Any]:
    # A small graph is drawn in this process in well under a millisecond (graphviz_lib): cheaper
    # than agreeing with a concurrent viewer about who draws it. Only a drawing by the program
    # is worth waiting for.
    drawn = _drawn(row.svg)
    if not drawn:
        # The item's other annotator often opens it moments after the first, with the row read
        # before the first stored its drawing: one this process stored is taken as it is.
        stored = _stored_here.get(_stored_key(row))
        if stored is not None:
            row.svg, drawn = stored, True
    cheap = not drawn and _in_process(row.data)
    if not drawn and (cheap or not _drawn_by_another(row)):
        try:
            svg, error = _render(row.data)
            if error:
                return {"svg": "", "error": error}
            row.svg = svg
            _store(row, svg)
        finally:
            if not cheap:
                cache.delete(_drawing_key(row))
    prefix = f"{type(row)._meta.model_name[:2]}{row.pk}-"
    return {"svg": mark_safe(_scoped(row.svg, prefix)), "error": ""}


_stored_here: dict[tuple, str] = {}  # (model, pk, created_at) -> drawing this process stored
_STORED_HERE = 256
_stored_lock = threading.Lock()
_STORE_SQL: dict = {}


def _stored_key(row) -> tuple:
    return (row._meta.label_lower, row.pk, row.created_at)


def _store(row, svg: str) -> None:
    """Store the drawing on the row unless a concurrent viewer stored one already (then it is
    left as it is: the same drawing, and no second write of the large column)."""
    model = type(row)
    sql = _STORE_SQL.get((model, connection.vendor))
    if sql is None:
        table = connection.ops.quote_name(model._meta.db_table)
        sql = _STORE_SQL[(model, connection.vendor)] = (
            f"UPDATE {table} SET svg = %s WHERE id = %s AND NOT ({drawn_sql('svg')})")
    # On SQLite the write queues with the other writers (almita_web/sqlite); elsewhere one
    # statement is atomic by itself: no BEGIN and COMMIT round trips.
    with transaction.atomic() if connection.vendor == "sqlite" else contextlib.nullcontext():
        with connection.cursor() as cursor:
            prepared_execute(cursor, sql, [svg, row.pk])
    with _stored_lock:
        if len(_stored_here) >= _STORED_HERE:
            del _stored_here[next(iter(_stored_here))]  # the oldest (dicts keep insertion order)
        _stored_here[_stored_key(row)] = svg


def _in_process(data: Any) -> bool:
    """Whether graphviz_lib draws this stored graph (small enough, library present)."""
    try:
        nodes, edges = len(data["nodes"]), len(data["edges"])
    except (TypeError, KeyError):
        return False
    return nodes <= graphviz_lib.MAX_NODES and edges <= graphviz_lib.MAX_EDGES and graphviz_lib.available()


def _drawing_key(row) -> str:
    return f"curation:drawing:{row._meta.label_lower}:{row.pk}:{row.created_at.timestamp():.6f}"


def _drawn_by_another(row, wait: float = 3.0) -> bool:
    """True when another request is drawing `row` and stored its SVG within `wait` seconds.

    The two annotators of an item usually open it within milliseconds of each other; without
    this both ran Graphviz for its first view. The first to ask draws; the other reads the row.
    """
    if cache.add(_drawing_key(row), 1, timeout=30):
        return False  # ours to draw
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        time.sleep(0.005)
        svg = type(row).objects.filter(pk=row.pk).values_list("svg", flat=True).first() or ""
        if _drawn(svg):
            row.svg = svg
            return True
    return False  # the other request failed or is slow: draw it here


@functools.lru_cache(maxsize=256)
def _scoped(svg: str, prefix: str) -> str:
    # The regex pass over a drawing cost a few hundred microseconds on every review page; the
    # key is the markup itself, so a redrawn graph never gets an old result.
    return scope_svg_ids(svg, prefix)


def highlighted_key(cg: ConversationGraph, path_nodes: list, conversation_id: int) -> str:
    """The cache key of a conversation's highlighted drawing (a correction of the graph deletes it)."""
    path_digest = hashlib.sha256(json.dumps([str(n) for n in path_nodes]).encode()).hexdigest()[:16]
    return f"curation:svg3:cg{cg.pk}:{cg.created_at.timestamp():.6f}:cv{conversation_id}:{path_digest}"


def highlighted_svg(cg: ConversationGraph, path_nodes: list, conversation_id: int) -> dict[str, Any]:
    # The cache outlives the database (a file cache shared by all processes): the row's creation
    # time and the path itself are in the key, so a reused primary key never finds an old drawing.
    key = highlighted_key(cg, path_nodes, conversation_id)
    svg = cache.get(key)
    if svg is None:
        svg, error = _render(cg.data, highlight=list(path_nodes))
        if error:
            return {"svg": "", "error": error}
        cache.set(key, svg, 24 * 3600)
    return {"svg": mark_safe(_scoped(svg, f"cg{cg.pk}c{conversation_id}-")), "error": ""}


def stage_fragments(stage: str, can_review: bool) -> dict[str, Any]:
    """The review page's parts that depend on the stage and its guideline version alone."""
    guide, version = current_guide(stage)
    return {**_fragments(stage, can_review, version, guide), "guideline_version": version}


@functools.lru_cache(maxsize=64)
def _fragments(stage: str, can_review: bool, version: int, guide) -> dict[str, str]:
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
    # Plain SQL, like curation.reviews.queue: on every review page, and the ORM spent a millisecond compiling it.
    sql = f"SELECT * FROM {Api._meta.db_table} WHERE procedure_id = %s ORDER BY name, id"
    return fetch(Api, sql, [procedure.pk], prepared=True)


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
            ctx["graphs"].append({"title": "Conversation graph · this path highlighted",
                                  **highlighted_svg(cg, artifact.path.node_ids, artifact.pk), "flaggable": True})
        ctx["turns"] = _turns(artifact.messages or [], cg_data, path_nodes)
        labelled = turns_with_actions(artifact.messages or [], artifact.turn_actions)  # #17: ToolDial actions
        for t in ctx["turns"]:
            t["action"] = labelled[t["index"]].get("action")
    ctx["procedure"] = procedure
    ctx["apis"] = _apis(procedure)
    return ctx

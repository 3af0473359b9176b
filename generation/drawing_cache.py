"""Drawings a page asks for (the API graph, a conversation graph's coverage), made by the worker.

No request waits for Graphviz. The page builds the DOT text (pure Python, quick) and asks
``drawing_for``: a drawing already in Django's cache (one for every web host) is inlined; otherwise
the ``generation.drawing_make`` task is queued once (a short "pending" mark stops repeats) and the
page shows "Drawing…" and polls ``generation:drawing_poll`` (static/js/drawing_poll.js), which
answers with the SVG once the worker has stored it. The key is the kind and a digest of the DOT
text, so a changed graph gets a new drawing and an unchanged one is drawn once.

A stored graph (generation.drawings) the worker has not drawn yet goes the same way, as kind
"flowgraph" or "conversationgraph" keyed by its row id and a digest of its data (a correction makes
a new key): the task draws it onto the row, as for a graph just stored, and leaves the page's copy
(ids scoped as ``graph_drawing_for`` scopes them) in the cache for the poll. Its roles are those of
the pages that show stored graphs: review, adjudication, the explorer's panel, the item page.

The worker draws through generation.pipeline.render.dot_to_svg, whose ``dot`` is stopped after
ALMITA_DRAW_TIMEOUT seconds; graphs above render.MAX_NODES / MAX_EDGES are refused before a task is
queued, and the page shows why in place of the drawing. Graphviz escapes every label (as for the
stored drawings, generation.drawings); the poll script parses the SVG as XML and drops scripts
and event attributes before inserting it.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
from typing import Any

from django.apps import apps
from django.core.cache import cache

from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, RESEARCHER
from generation.pipeline.render import (
    GraphTooLarge,
    GraphvizMissing,
    dot_to_svg,
    message_svg,
    size_guard,
)
from generation.pipeline.svg_ids import scope_svg_ids

log = logging.getLogger(__name__)

# Who may see each kind of drawing (the roles of the page that shows it).
GRAPH_ROLES = (ANNOTATOR, ADJUDICATOR, RESEARCHER, ADMIN)
KINDS: dict[str, tuple[str, ...]] = {"api_graph": (RESEARCHER, ADMIN), "coverage": (ADMIN,),
                                     "flowgraph": GRAPH_ROLES, "conversationgraph": GRAPH_ROLES}
GRAPH_KINDS = {"flowgraph": "generation.flowgraph", "conversationgraph": "generation.conversationgraph"}
PREFIX = "almita:drawing1"
KEEP = 7 * 24 * 3600  # drawings: their key changes with the graph
KEEP_POLL = 3600  # a stored graph's copy for the poll: pages read the row once it is drawn
KEEP_ERROR = 60  # a failed drawing is tried again after this
PENDING_FOR = 120  # queued once per this many seconds while the worker has not answered


def drawing_key(kind: str, dot: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"not a drawing kind: {kind!r}")
    return hashlib.sha256(f"{kind}\n{dot}".encode()).hexdigest()[:40]


def _cache_key(kind: str, key: str) -> str:
    return f"{PREFIX}:{kind}:{key}"


def stored(kind: str, key: str) -> dict[str, Any] | None:
    """{"svg", "error"} once the worker has drawn it, else None."""
    got = cache.get(_cache_key(kind, key))
    return got if isinstance(got, dict) else None


def drawing_for(kind: str, dot: str, nodes: int, edges: int) -> dict[str, Any]:
    """What a page shows for this DOT text: {"svg", "error", "pending", "key", "kind"}.
    Never draws: a drawing not in the cache is queued for the worker (pending=True)."""
    key = drawing_key(kind, dot)
    out: dict[str, Any] = {"svg": "", "error": "", "pending": False, "key": key, "kind": kind}
    try:
        size_guard(nodes, edges)
    except GraphTooLarge as exc:
        return {**out, "svg": message_svg(str(exc))}  # the message is the drawing
    return _stored_or_queued(out, dot)


def _stored_or_queued(out: dict[str, Any], source: str) -> dict[str, Any]:
    kind, key = out["kind"], out["key"]
    got = stored(kind, key)
    if got is not None:
        return {**out, **got}
    if cache.add(f"{_cache_key(kind, key)}:pending", 1, PENDING_FOR):
        from generation.tasks import drawing_make_task

        try:
            drawing_make_task.delay(kind, key, source)
        except Exception as exc:  # noqa: BLE001 - no broker: say so, the next view queues again
            cache.delete(f"{_cache_key(kind, key)}:pending")
            log.warning("drawing %s %s not queued: %s", kind, key, type(exc).__name__)
            return {**out, "error": "The drawing could not be queued (is the worker's broker running?)."}
        got = stored(kind, key)  # a task run in process (CELERY_TASK_ALWAYS_EAGER) has drawn it
        if got is not None:
            return {**out, **got}
    return {**out, "pending": True}


def _scope_prefix(kind: str, pk: int) -> str:
    return f"{kind[:2]}{pk}-"


@functools.lru_cache(maxsize=256)
def _scoped(svg: str, prefix: str) -> str:
    # The key is the markup itself, so a redrawn graph never gets an old result.
    return scope_svg_ids(svg, prefix)


def graph_drawing_for(row) -> dict[str, Any]:
    """What a page shows of a stored graph row (Flowgraph or ConversationGraph): its stored drawing
    with ids scoped to the row (several drawings share a page), or, when the worker has not drawn
    it yet, the drawing queued once for the worker (pending=True). Never draws. Reads the row's
    data only when it is not drawn."""
    from generation.drawings import is_drawn

    kind = type(row)._meta.model_name
    if kind not in GRAPH_KINDS:
        raise ValueError(f"not a stored graph: {kind!r}")
    out: dict[str, Any] = {"svg": "", "error": "", "pending": False, "key": "", "kind": kind}
    if is_drawn(row.svg):
        return {**out, "svg": _scoped(row.svg, _scope_prefix(kind, row.pk))}
    data = json.dumps(row.data, sort_keys=True, default=str)
    out["key"] = drawing_key(kind, f"{row.pk}\n{data}")
    return _stored_or_queued(out, str(row.pk))


def _graph_make(kind: str, source: str) -> tuple[dict[str, str], int]:
    from generation.drawings import drawing_store, is_drawn

    row = apps.get_model(GRAPH_KINDS[kind]).objects.filter(pk=int(source)).only("pk", "data", "svg").first()
    if row is None:
        return {"svg": "", "error": "The graph no longer exists."}, KEEP_ERROR
    if not is_drawn(row.svg):
        _svg, error = drawing_store(row)  # on the row, as for a graph just stored
        if error:
            return {"svg": "", "error": error}, KEEP_ERROR
    return {"svg": _scoped(row.svg, _scope_prefix(kind, row.pk)), "error": ""}, KEEP_POLL


def drawing_make(kind: str, key: str, dot: str) -> dict[str, str]:
    """The worker's part: draw the DOT text (bounded by ALMITA_DRAW_TIMEOUT) and store the result.
    For a stored graph's kind, ``dot`` is the row id: the row's drawing is made and stored on it
    (the key names the data the page saw; a row changed since is drawn as it is now)."""
    if kind in GRAPH_KINDS:
        if len(key) != 40 or not dot.isdigit():
            raise ValueError("not a stored graph's drawing")
        result, keep = _graph_make(kind, dot)
        cache.set(_cache_key(kind, key), result, keep)
        cache.delete(f"{_cache_key(kind, key)}:pending")
        return result
    if drawing_key(kind, dot) != key:
        raise ValueError("the key does not match the DOT text")
    try:
        result, keep = {"svg": dot_to_svg(dot), "error": ""}, KEEP
    except GraphvizMissing as exc:
        result, keep = {"svg": "", "error": str(exc)}, KEEP_ERROR
    except (RuntimeError, OSError) as exc:
        result, keep = {"svg": message_svg(f"The graph could not be drawn: {exc}"),
                        "error": f"The graph could not be drawn: {exc}"}, KEEP_ERROR
    cache.set(_cache_key(kind, key), result, keep)
    cache.delete(f"{_cache_key(kind, key)}:pending")
    return result

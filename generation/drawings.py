"""Drawings of stored graphs: made by the worker when a graph is stored, kept on the row's ``svg``.

A flowgraph or conversation graph written by a generation stage or an import is queued for the
``generation.graphs_draw`` task once its transaction commits, so the review, graph and report
pages read a drawing that is already there. A page that meets a graph the worker has not drawn
yet (a worker behind, a row older than this, a correction just saved) queues it for the worker
and polls for it (generation.drawing_cache.graph_drawing_for): no request runs Graphviz.

The root element carries ``data-layout``, the direction the graph's shape chose
(``to_svg_readable``; written first, it marks a current drawing: older ones are drawn again once),
and ``data-nodes``: the node ids in the renderer's order (Graphviz names node i ``n<i>``), so the
page script maps a drawn node back to its id; escaped as an attribute.
"""
from __future__ import annotations

import json
import logging
from typing import Any

from django.apps import apps
from django.db import models, transaction
from django.utils.html import escape

from generation.pipeline.formats import GraphFormatError, graph_from_json
from generation.pipeline.render import GraphTooLarge, GraphvizMissing, message_svg, to_svg_readable, to_svgs_readable

log = logging.getLogger(__name__)

# A stored drawing is current when this mark (the layout direction) is in its first characters.
DRAWN_MARK = "data-layout="
DRAWN_WITHIN = 400
GRAPH_MODELS = ("generation.flowgraph", "generation.conversationgraph")


def is_drawn(svg: str | None) -> bool:
    """Drawings made before the layout choice count as undrawn (they are redrawn)."""
    return bool(svg) and DRAWN_MARK in svg[:DRAWN_WITHIN]


def graph_drawing(data: Any) -> tuple[str, str]:
    """(svg, error) for a graph stored as graph_to_json data."""
    try:
        g = graph_from_json(data)
        return _marked(g, *to_svg_readable(g)), ""
    except GraphTooLarge as exc:  # stored as the drawing (marked drawn): the message, not a retry
        return message_svg(str(exc)).replace("<svg", '<svg data-layout="TB" data-nodes="[]"', 1), ""
    except GraphvizMissing as exc:
        return "", str(exc)
    except GraphFormatError as exc:
        return "", f"The stored graph could not be read: {exc}"
    except Exception as exc:  # noqa: BLE001 - dot failed: show the reason, keep the page usable
        return "", f"The graph could not be drawn: {exc}"


def _marked(g: Any, svg: str, rankdir: str) -> str:
    names = escape(json.dumps([str(n) for n in g.nodes]))
    return svg.replace("<svg", f'<svg data-layout="{rankdir}" data-nodes="{names}"', 1)


def graph_drawings(datas: list[Any]) -> list[tuple[str, str]]:
    """graph_drawing of each graph, drawn by one `dot` process (render.dots_to_svgs says why);
    when that process fails, each graph is drawn on its own, so one bad graph costs only itself."""
    if len(datas) > 1:
        try:
            graphs = [graph_from_json(d) for d in datas]
            return [(_marked(g, svg, rankdir), "") for g, (svg, rankdir) in zip(graphs, to_svgs_readable(graphs))]
        except Exception:  # noqa: BLE001 - unreadable, too large or undrawable: graph_drawing says which
            pass
    return [graph_drawing(d) for d in datas]


def drawing_store(row: models.Model) -> tuple[str, str]:
    """Draw the row's graph and store the drawing on it; (svg, error)."""
    svg, error = graph_drawing(row.data)
    if not error:
        type(row).objects.filter(pk=row.pk).update(svg=svg)
        row.svg = svg
    return svg, error


def graphs_draw(label: str, ids: list[int]) -> int:
    """Draw the rows of `label` (one of GRAPH_MODELS) among `ids` that have no current drawing;
    returns how many were drawn. Idempotent: a drawn row is left as it is."""
    if label not in GRAPH_MODELS:
        raise ValueError(f"not a graph model: {label!r}")
    model = apps.get_model(label)
    rows = [row for row in model.objects.filter(pk__in=ids).only("pk", "data", "svg") if not is_drawn(row.svg)]
    drawn = 0
    for row, (svg, error) in zip(rows, graph_drawings([row.data for row in rows])):
        if not error:
            model.objects.filter(pk=row.pk).update(svg=svg)
            drawn += 1
    return drawn


def graphs_stored(model: type[models.Model], ids: list[int]) -> None:
    """Queue the drawing of these newly stored (or corrected) graph rows for when the transaction
    commits."""
    label = model._meta.label_lower
    if label not in GRAPH_MODELS or not ids:
        return

    def send() -> None:
        from generation.tasks import graphs_draw_task

        try:
            graphs_draw_task.delay(label, list(ids))
        except Exception as exc:  # noqa: BLE001 - a broker outage: the page queues it again
            log.warning("drawing of %s %s not queued: %s", label, ids[:5], type(exc).__name__)

    transaction.on_commit(send)

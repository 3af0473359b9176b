"""The artifact behind a review item, with the rows its review page shows, read by primary key.

The review page is the most frequent page of the product. Its artifact used to come from one
ORM query with select_related and deferred columns, which took longer to build than the few
one-row reads below take to run (almita_web.rows keeps their plans).
"""
from __future__ import annotations

from django.db import connection, models

from almita_web.rows import fetch_one
from curation.models import ReviewItem, ReviewStage
from generation.models import Conversation, ConversationGraph, Flowgraph, Intent, Procedure, SampledPath


def _row(model, pk, skip: tuple[str, ...] = ()):
    """One row by primary key in plain SQL (almita_web.rows); `skip`ped columns stay deferred."""
    sql = _ROW_SQL.get((model, skip))
    if sql is None:
        qn = connection.ops.quote_name
        cols = ", ".join(qn(f.column) for f in model._meta.concrete_fields if f.name not in skip)
        sql = _ROW_SQL[(model, skip)] = f"SELECT {cols} FROM {qn(model._meta.db_table)} WHERE id = %s"
    return fetch_one(model, sql, [pk], prepared=True) if pk is not None else None


_ROW_SQL: dict = {}
_DRAWN = ("data", "svg", "text")


def _procedure(pk: int):
    """The procedure with its intent attached, each read by primary key."""
    proc = _row(Procedure, pk)
    if proc is not None:
        intent = _row(Intent, proc.intent_id)
        if intent is not None:
            proc.intent = intent
    return proc


def _with_procedure(row, procedure_id: int):
    proc = _procedure(procedure_id)
    if proc is not None:
        row.procedure = proc
    return row


def artifact_for(item: ReviewItem) -> models.Model | None:
    """The item's artifact with the rows its page shows, each read by primary key in plain SQL.

    Graph data (large JSON) is deferred: pages draw the SVG cached on the row and read the data
    only when that cache is empty, so most requests need not fetch and parse it. A deferred field
    still loads on first access. (The ORM's select_related query for this cost more to build than
    the few one-row reads.)
    """
    oid = item.object_id
    if item.stage == ReviewStage.PROCEDURE:
        return _procedure(oid)
    if item.stage == ReviewStage.FLOWGRAPH:
        fg = _row(Flowgraph, oid, ("data",))
        return _with_procedure(fg, fg.procedure_id) if fg is not None else None
    if item.stage == ReviewStage.CONVERSATION_GRAPH:
        cg = _row(ConversationGraph, oid, ("data",))
        if cg is None:
            return None
        fg = _row(Flowgraph, cg.flowgraph_id, ("data",))
        if fg is not None:
            cg.flowgraph = _with_procedure(fg, fg.procedure_id)
        return cg
    conv = _row(Conversation, oid)
    if conv is None:
        return None
    if conv.path_id is not None:
        path = _row(SampledPath, conv.path_id)
        if path is not None:
            cg = _row(ConversationGraph, path.conversation_graph_id, _DRAWN)
            if cg is not None:
                fg = _row(Flowgraph, cg.flowgraph_id, _DRAWN)
                if fg is not None:
                    cg.flowgraph = fg
                path.conversation_graph = cg
            conv.path = path
    return _with_procedure(conv, conv.procedure_id)

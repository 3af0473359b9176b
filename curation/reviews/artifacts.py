"""The artifact behind a review item, with the rows its review page shows, in one query.

The review page is the most frequent page of the product. Its artifact used to come from one
ORM query with select_related and deferred columns, which took longer to build than to run;
then from one plain read per row (artifact, procedure, intent: three round trips to the database
for a flowgraph, five for a conversation). Now each stage's chain of rows is one outer join, run
as a prepared statement on Postgres (almita_web.rows.fetch_joined keeps its column plans).

Graph data (large JSON) is sent only while the row has no drawing: the page draws the SVG cached
on the row, so once drawn it needs no data (a deferred field still loads on first access).
"""
from __future__ import annotations

from django.db import connection, models

from almita_web.rows import fetch_joined, select_columns
from curation.models import ReviewItem, ReviewStage
from generation.models import Conversation, ConversationGraph, Flowgraph, Intent, Procedure, SampledPath

# A stored drawing is current when this mark (the node map) is in its first characters
# (curation.reviews.present._drawn says the same in Python).
DRAWN_MARK = "data-nodes="
DRAWN_WITHIN = 400

_SQL: dict = {}


def drawn_sql(column: str) -> str:
    """SQL true when `column` holds a current drawing (curation.reviews.present._drawn)."""
    find = "strpos" if connection.vendor == "postgresql" else "instr"
    return f"{find}(substr({column}, 1, {DRAWN_WITHIN}), '{DRAWN_MARK}') > 0"


def _chain(stage: str) -> tuple[str, list]:
    """(SQL, models) of one stage's artifact and the rows its page shows, joined on their keys."""
    built = _SQL.get((stage, connection.vendor))
    if built is not None:
        return built
    t = lambda model: model._meta.db_table  # noqa: E731
    procedure_intent = [("p", Procedure, (), False), ("i", Intent, (), False)]
    joins_pi = f"LEFT JOIN {t(Intent)} i ON i.id = p.intent_id"
    if stage == ReviewStage.PROCEDURE:
        parts, joins = procedure_intent, f"FROM {t(Procedure)} p {joins_pi}"
    elif stage == ReviewStage.FLOWGRAPH:
        parts = [("f", Flowgraph, (), True)] + procedure_intent
        joins = f"FROM {t(Flowgraph)} f LEFT JOIN {t(Procedure)} p ON p.id = f.procedure_id {joins_pi}"
    elif stage == ReviewStage.CONVERSATION_GRAPH:
        parts = [("g", ConversationGraph, (), True), ("f", Flowgraph, (), True)] + procedure_intent
        joins = (f"FROM {t(ConversationGraph)} g LEFT JOIN {t(Flowgraph)} f ON f.id = g.flowgraph_id "
                 f"LEFT JOIN {t(Procedure)} p ON p.id = f.procedure_id {joins_pi}")
    else:
        # The conversation's page draws its graph with the path highlighted (from the data) and
        # shows neither drawing nor text of the graphs themselves.
        parts = [("c", Conversation, (), False), ("s", SampledPath, (), False),
                 ("g", ConversationGraph, ("svg", "text"), False),
                 ("f", Flowgraph, ("data", "svg", "text"), False)] + procedure_intent
        joins = (f"FROM {t(Conversation)} c LEFT JOIN {t(SampledPath)} s ON s.id = c.path_id "
                 f"LEFT JOIN {t(ConversationGraph)} g ON g.id = s.conversation_graph_id "
                 f"LEFT JOIN {t(Flowgraph)} f ON f.id = g.flowgraph_id "
                 f"LEFT JOIN {t(Procedure)} p ON p.id = c.procedure_id {joins_pi}")
    first = parts[0][0]
    # (alias, model, fields left out, drawn: a graph the page draws from the SVG on its row, so
    # its data is sent only while the row has no current drawing)
    cols = [select_columns(alias, model, skip, {"data": f"CASE WHEN {drawn_sql(alias + '.svg')} THEN NULL "
                                                        f"ELSE {alias}.data END AS data"} if drawn else None)
            for alias, model, skip, drawn in parts]
    sql = f"SELECT {', '.join(cols)} {joins} WHERE {first}.id = %s"
    built = _SQL[(stage, connection.vendor)] = (sql, [model for _a, model, _s, _d in parts])
    return built


def artifact_for(item: ReviewItem) -> models.Model | None:
    """The item's artifact with the rows its page shows attached (procedure with intent; the
    graphs above a conversation graph or conversation), read in one statement."""
    sql, parts = _chain(item.stage)
    found = fetch_joined(parts, sql, [item.object_id], deferred_if_null=frozenset({"data"}))
    if not found:
        return None
    rows = list(found[0])
    procedure, intent = rows[-2], rows[-1]
    if procedure is not None and intent is not None:
        procedure.intent = intent
    if item.stage == ReviewStage.PROCEDURE:
        return procedure
    artifact = rows[0]
    if item.stage == ReviewStage.CONVERSATION_GRAPH:
        flowgraph = rows[1]
        if flowgraph is not None:
            if procedure is not None:
                flowgraph.procedure = procedure
            artifact.flowgraph = flowgraph
        return artifact
    if item.stage == ReviewStage.CONVERSATION:
        path, graph, flowgraph = rows[1], rows[2], rows[3]
        if graph is not None:
            if flowgraph is not None:
                graph.flowgraph = flowgraph
            path.conversation_graph = graph
        if path is not None:
            artifact.path = path
    if procedure is not None:
        artifact.procedure = procedure
    return artifact

"""The artifact behind a review item, with the rows its review page shows (select_related).

A graph's page shows the drawing stored on its row (drawn by the worker when the graph was
stored), so its large JSON data is deferred: it loads on first access, for a graph not yet drawn.
"""
from __future__ import annotations

from django.db import models

from curation.models import ReviewItem, ReviewStage
from generation.models import Conversation, ConversationGraph, Flowgraph, Procedure

def artifact_for(item: ReviewItem) -> models.Model | None:
    """The item's artifact with the rows its page shows attached (procedure with intent; the
    graphs above a conversation graph or conversation), read in one statement."""
    stage = item.stage
    if stage == ReviewStage.PROCEDURE:
        qs = Procedure.objects.select_related("intent")
    elif stage == ReviewStage.FLOWGRAPH:
        qs = Flowgraph.objects.select_related("procedure__intent").defer("data")
    elif stage == ReviewStage.CONVERSATION_GRAPH:
        qs = ConversationGraph.objects.select_related("flowgraph__procedure__intent").defer(
            "data", "flowgraph__data")
    else:
        # The conversation's page shows its graph's stored drawing (the path is highlighted in the
        # browser) and aligns the turns with the graph's data; no text, no flowgraph drawing.
        qs = Conversation.objects.select_related("path__conversation_graph__flowgraph", "procedure__intent").defer(
            "path__conversation_graph__text",
            "path__conversation_graph__flowgraph__data", "path__conversation_graph__flowgraph__svg",
            "path__conversation_graph__flowgraph__text")
    return qs.filter(pk=item.object_id).first()

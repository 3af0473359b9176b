"""Shared builders for the closed-loop tests: a graph with branches and a loop, conversations on
its coverage paths, and reviews submitted the way the queue would (claim, then verdict)."""
from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from curation.models import Claim, ReviewItem, ReviewStage
from curation.reviews.services import items_sync, review_submit
from generation import models as g
from generation.pipeline.convert import flowgraph_to_conversation_graph
from generation.pipeline.extract import extract_tests
from generation.pipeline.formats import graph_to_json, parse_graph_text
from generation.pipeline.realise import realise_conversation
from generation.pipeline.sampling import sample_paths
from tests.curation.factories import APIS, ProcedureFactory

# Four ways to end and a loop back to asking for the order id.
FLOWGRAPH = """\
[N0](start_message){Hello, how can I help you today?}
[N1](message){Please tell me your order id.}
[N2](api){get_order}
[N3](end_message){Your order is on its way.}
[N4](message){The parcel is lost. Would you like a refund?}
[N5](api){refund_order}
[N6](end_message){Your refund has been issued.}
[N7](end_message){Alright, no refund then. Goodbye.}
[N8](message){That id is unknown. Please check it.}
[E0](N0, N1){My order has not arrived}
[E1](N1, N2){Here is my order id}
[E2](N2, N3){shipped}
[E3](N2, N4){lost}
[E4](N4, N5){Yes, refund me}
[E5](N5, N6){success}
[E6](N4, N7){No thanks}
[E7](N2, N8){not found}
[E8](N8, N1){Let me check}
"""


def build_graph_with_conversations(*, sampler: str = "coverage", n: int = 0):
    """Procedure → flowgraph → conversation graph → paths → conversations → tests; returns the graph row."""
    procedure = ProcedureFactory()
    for a in APIS:
        g.Api.objects.create(procedure=procedure, name=a.name, description=a.description,
                             parameters=[{"name": p.name, "type": p.type, "required": p.required,
                                          "description": p.description} for p in a.params],
                             output_name=a.output_name, output_type=a.output_type)
    fg_graph = parse_graph_text(FLOWGRAPH, kind="flowgraph")
    fg = g.Flowgraph.objects.create(procedure=procedure, text=FLOWGRAPH, data=graph_to_json(fg_graph))
    cg_graph = flowgraph_to_conversation_graph(fg_graph)
    cg = g.ConversationGraph.objects.create(flowgraph=fg, data=graph_to_json(cg_graph))
    for i, node_ids in enumerate(sample_paths(cg_graph, n, sampler=sampler, seed=1)):
        path = g.SampledPath.objects.create(conversation_graph=cg, node_ids=node_ids, index=i, sampler=sampler)
        messages = realise_conversation(cg_graph, node_ids, APIS, seed=i)
        conv = g.Conversation.objects.create(path=path, procedure=procedure, messages=messages)
        for t in extract_tests(messages):
            exp = t["expected"]
            g.Test.objects.create(conversation=conv, position=t["position"], context=t["context"],
                                  expected_type=exp["type"], expected_text=exp.get("content", ""),
                                  expected_api_name=exp.get("name", ""), expected_parameters=exp.get("parameters", {}))
    return cg


def item_of(stage: str, obj) -> ReviewItem:
    items_sync()
    return ReviewItem.objects.get(stage=stage, object_id=obj.pk)


def decide(item: ReviewItem, users, verdict: str = "accept", reasons=None, comment: str = "",
           claimed_at=None, verdict_at=None) -> None:
    """Every user claims the item and submits the verdict (optionally at given times)."""
    for user in users:
        start = claimed_at or timezone.now()
        Claim.objects.create(item=item, annotator=user, claimed_at=start, expires_at=start + timedelta(hours=1))
        review = review_submit(annotator=user, item_id=item.pk, verdict=verdict, reason_codes=reasons or [],
                               comment=comment)
        if verdict_at is not None:
            type(review).objects.filter(pk=review.pk).update(created_at=verdict_at, updated_at=verdict_at)


def accept_lineage_above(cg, users) -> None:
    """Accept the procedure, flowgraph and conversation graph of ``cg``."""
    decide(item_of(ReviewStage.PROCEDURE, cg.flowgraph.procedure), users)
    decide(item_of(ReviewStage.FLOWGRAPH, cg.flowgraph), users)
    decide(item_of(ReviewStage.CONVERSATION_GRAPH, cg), users)

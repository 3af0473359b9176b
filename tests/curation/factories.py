"""Factories for pipeline artifacts, built with the real pipeline functions where they exist.

``build_lineage()`` makes Intent → Procedure (+APIs) → Flowgraph → ConversationGraph →
SampledPaths → Conversations → Tests from a small hand-written flowgraph, so review pages show
realistic graphs and the cascade has something to cascade into.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import factory

from generation import models as g
from generation.pipeline.apis import ApiSpec, ParamSpec
from generation.pipeline.convert import flowgraph_to_conversation_graph
from generation.pipeline.extract import extract_tests
from generation.pipeline.formats import graph_to_json, parse_graph_text
from generation.pipeline.realise import realise_conversation
from generation.pipeline.sampling import raw_walks

HOSTILE = '<script>alert("pwned")</script> "]; a -> b [ \'quoted\' & done'

FLOWGRAPH_TEXT = """\
[N0](start_message){Hello, how can I help you today?}
[N1](message){Please tell me your order id.}
[N2](api){get_order}
[N3](end_message){Your order is on its way and will arrive soon.}
[N4](message){The parcel is lost. Would you like a refund?}
[N5](api){refund_order}
[N6](end_message){Your refund has been issued.}
[E0](N0, N1){My order has not arrived}
[E1](N1, N2){Here is my order id}
[E2](N2, N3){shipped}
[E3](N2, N4){lost}
[E4](N4, N5){Yes, refund me}
[E5](N5, N6){success}
"""

APIS = [
    ApiSpec("get_order", "Look up an order by id", [ParamSpec("order_id", "str")], "order", "dict"),
    ApiSpec("refund_order", "Refund an order", [ParamSpec("order_id", "str")], "refund", "dict"),
]


class IntentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = g.Intent

    client = "Acme Shop"
    issue = factory.Sequence(lambda n: f"Customer issue number {n}")
    name = factory.Sequence(lambda n: f"order not received {n}")


class ProcedureFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = g.Procedure

    intent = factory.SubFactory(IntentFactory)
    title = factory.Sequence(lambda n: f"Order not received {n}")
    text = ("1. Greet the customer.\n2. Ask for the order id.\n3. Look the order up with get_order.\n"
            "4. If shipped, say it is on its way. If lost, offer a refund with refund_order.")


class ApiFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = g.Api

    procedure = factory.SubFactory(ProcedureFactory)
    name = factory.Sequence(lambda n: f"api_{n}")
    description = "An agent API"
    parameters = factory.LazyFunction(lambda: [{"name": "order_id", "type": "str", "required": True, "description": ""}])
    output_name = "result"
    output_type = "dict"


class FlowgraphFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = g.Flowgraph

    procedure = factory.SubFactory(ProcedureFactory)
    text = FLOWGRAPH_TEXT
    data = factory.LazyFunction(lambda: graph_to_json(parse_graph_text(FLOWGRAPH_TEXT, kind="flowgraph")))


class ConversationGraphFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = g.ConversationGraph

    flowgraph = factory.SubFactory(FlowgraphFactory)
    data = factory.LazyAttribute(
        lambda o: graph_to_json(flowgraph_to_conversation_graph(_graph(o.flowgraph.data))))


def _graph(data):
    from generation.pipeline.formats import graph_from_json

    return graph_from_json(data)


@dataclass
class Lineage:
    intent: g.Intent
    procedure: g.Procedure
    apis: list[g.Api]
    flowgraph: g.Flowgraph
    conversation_graph: g.ConversationGraph
    paths: list[g.SampledPath] = field(default_factory=list)
    conversations: list[g.Conversation] = field(default_factory=list)
    tests: list[g.Test] = field(default_factory=list)


def build_lineage(*, conversations: int = 2, hostile: bool = False, validation: list | None = None,
                  seed: int = 0, text: str = FLOWGRAPH_TEXT) -> Lineage:
    """A full lineage; ``hostile`` puts script tags, quotes and DOT syntax into every text; ``text``
    is the flowgraph (its API nodes among get_order and refund_order)."""
    if hostile:
        text = text.replace("Please tell me your order id.", f"Please tell me your order id. {HOSTILE}")
    intent = IntentFactory(name=HOSTILE if hostile else "order not received")
    procedure = ProcedureFactory(intent=intent, text=(HOSTILE + "\n" if hostile else "") + ProcedureFactory.text)
    apis = [
        g.Api.objects.create(procedure=procedure, name=a.name, description=(HOSTILE if hostile else a.description),
                             parameters=[{"name": p.name, "type": p.type, "required": p.required,
                                          "description": p.description} for p in a.params],
                             output_name=a.output_name, output_type=a.output_type)
        for a in APIS
    ]
    fg_graph = parse_graph_text(text, kind="flowgraph")
    flowgraph = g.Flowgraph.objects.create(procedure=procedure, text=text, data=graph_to_json(fg_graph),
                                           validation=validation or [])
    cg_graph = flowgraph_to_conversation_graph(fg_graph)
    cg = g.ConversationGraph.objects.create(flowgraph=flowgraph, data=graph_to_json(cg_graph))
    lineage = Lineage(intent, procedure, apis, flowgraph, cg)
    for i, node_ids in enumerate(raw_walks(cg_graph, conversations, seed=seed)):
        path = g.SampledPath.objects.create(conversation_graph=cg, node_ids=node_ids, seed=seed, index=i)
        messages = realise_conversation(cg_graph, node_ids, APIS, seed=seed + i)
        if hostile:
            messages[0] = {"role": "user", "content": HOSTILE}
        conv = g.Conversation.objects.create(path=path, procedure=procedure, messages=messages)
        lineage.paths.append(path)
        lineage.conversations.append(conv)
        for t in extract_tests(messages):
            exp = t["expected"]
            lineage.tests.append(g.Test.objects.create(
                conversation=conv, position=t["position"], context=t["context"], expected_type=exp["type"],
                expected_text=exp.get("content", ""), expected_api_name=exp.get("name", ""),
                expected_parameters=exp.get("parameters", {}),
            ))
    return lineage


def draw_graphs() -> None:
    """What the worker does once graphs are stored (generation.drawings): draw every graph row."""
    from generation.drawings import graphs_draw
    from generation.models import ConversationGraph, Flowgraph

    for label, model in (("generation.flowgraph", Flowgraph), ("generation.conversationgraph", ConversationGraph)):
        graphs_draw(label, list(model.objects.values_list("pk", flat=True)))

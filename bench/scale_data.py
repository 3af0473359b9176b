"""Artifacts for bench/scale.py: a lineage (intents → procedures with APIs → flowgraphs →
conversation graphs → paths → conversations → tests) bulk-created quickly, with the row shapes of
bench/export.py (a ~300-word procedure, four APIs, 14-message conversations with 7 tests each)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from export import templates  # noqa: E402  (bench/export.py: the same realistic rows)

TESTS_PER_CONVERSATION = 7
CONVERSATIONS_PER_PROCEDURE = 120


def build_artifacts(n_tests: int) -> dict[str, list[int]]:
    """Create about `n_tests` tests with their whole lineage; return the ids per review stage."""
    from generation.models import (
        Api, Conversation, ConversationGraph, Flowgraph, Intent, Procedure, SampledPath, Test,
    )

    pool = templates()
    n_convs = -(-n_tests // TESTS_PER_CONVERSATION)
    n_procs = -(-n_convs // CONVERSATIONS_PER_PROCEDURE)
    tpl = [pool[k % len(pool)] for k in range(n_procs)]
    intents = Intent.objects.bulk_create([
        Intent(client=t["intent"]["client"], issue=t["intent"]["issue"], name=f"{t['intent']['name']} #{k}")
        for k, t in enumerate(tpl)])
    procs = Procedure.objects.bulk_create([
        Procedure(intent=i, title=t["procedure"]["title"], text=t["procedure"]["text"]) for i, t in zip(intents, tpl)])
    Api.objects.bulk_create([
        Api(procedure=p, name=a["name"], description=a["desc"], parameters=a["params"])
        for p, t in zip(procs, tpl) for a in t["apis"]])
    graph = {"nodes": [{"id": f"N{k}", "type": "agent"} for k in range(6)],
             "edges": [{"source": f"N{k}", "target": f"N{k + 1}"} for k in range(5)]}
    fgs = Flowgraph.objects.bulk_create([Flowgraph(procedure=p, data=graph, text="N0 -> N1") for p in procs])
    cgs = ConversationGraph.objects.bulk_create([ConversationGraph(flowgraph=f, data=graph) for f in fgs])
    paths = SampledPath.objects.bulk_create([
        SampledPath(conversation_graph=cgs[c // CONVERSATIONS_PER_PROCEDURE], node_ids=tpl[0]["path_node_ids"],
                    index=c) for c in range(n_convs)], batch_size=2000)
    convs = []
    for c, path in enumerate(paths):
        t = tpl[c // CONVERSATIONS_PER_PROCEDURE]
        convs.append(Conversation(path=path, procedure=procs[c // CONVERSATIONS_PER_PROCEDURE], messages=t["context"],
                                  noise_kinds=t["noise_kinds"]))
    convs = Conversation.objects.bulk_create(convs, batch_size=2000)
    tests, made = [], 0
    for c, conv in enumerate(convs):
        t = tpl[c // CONVERSATIONS_PER_PROCEDURE]
        exp = t["expected"]
        for j in range(TESTS_PER_CONVERSATION):
            if made == n_tests:
                break
            made += 1
            tests.append(Test(conversation=conv, position=2 * j + 1, context=t["context"][: 2 * j + 1],
                              expected_type=exp["type"], expected_text=exp.get("content", ""),
                              expected_api_name=exp.get("name", ""), expected_parameters=exp.get("parameters", {}),
                              status="accepted"))
            if len(tests) >= 5000:
                Test.objects.bulk_create(tests)
                tests = []
    Test.objects.bulk_create(tests)
    return {"procedure": [p.pk for p in procs], "flowgraph": [f.pk for f in fgs],
            "conversation_graph": [g.pk for g in cgs], "conversation": [c.pk for c in convs]}

"""Build Almita import documents through the real pipeline (flowgraph → conversation graph → paths
→ conversations → tests), so the import, release and export tests use realistic material."""
from __future__ import annotations

from typing import Any

from generation.pipeline.apis import ApiSpec, ParamSpec, api_to_dict
from generation.pipeline.convert import flowgraph_to_conversation_graph
from generation.pipeline.extract import extract_tests
from generation.pipeline.formats import graph_to_json, parse_graph_text
from generation.pipeline.realise import realise_conversation
from generation.pipeline.sampling import raw_walks

FLOW = """<flow>
[N0](start_message){Greet the customer and ask how to help}
[E0](N0, N1){My parcel is late}
[N1](message){Ask for the tracking number}
[E1](N1, N2){Gives the tracking number}
[N2](api){track_parcel}
[E2](N2, N3){in transit}
[E3](N2, N4){lost}
[N3](end_message){Give the expected delivery date}
[N4](api){open_claim}
[E4](N4, N5){claim opened}
[N5](end_message){Confirm the claim and say goodbye}
</flow>"""

APIS = [
    ApiSpec("track_parcel", "Find where a parcel is.", [ParamSpec("tracking_number", "str")], "status", "str"),
    ApiSpec("open_claim", "Open a claim for a lost parcel.", [ParamSpec("tracking_number", "str")], "claim_id", "str"),
]


def document(n_procedures: int = 2, paths_per_graph: int = 3, tag: str = "") -> dict[str, Any]:
    records: list[dict[str, Any]] = []
    for p in range(n_procedures):
        iid, pid, fid, gid = f"i{p}", f"p{p}", f"f{p}", f"g{p}"
        records.append({"kind": "intent", "id": iid, "client": f"Parcel company {p}{tag}",
                        "issue": "A parcel has not arrived", "name": f"late parcel {p}{tag}"})
        records.append({"kind": "procedure", "id": pid, "intent": iid, "title": f"Late parcels {p}",
                        "text": f"1. Ask for the tracking number.\n2. Track it.\n3. Open a claim if lost. ({p}{tag})",
                        "apis": [api_to_dict(a) for a in APIS]})
        fg = parse_graph_text(FLOW, "flowgraph")
        records.append({"kind": "flowgraph", "id": fid, "procedure": pid, "graph": graph_to_json(fg), "text": FLOW})
        cg = flowgraph_to_conversation_graph(fg)
        records.append({"kind": "conversation_graph", "id": gid, "flowgraph": fid, "mode": "deterministic",
                        "graph": graph_to_json(cg), "text": "", "noise_rate": 0.0, "noise_kinds": []})
        for k, path in enumerate(raw_walks(cg, paths_per_graph, seed=p)):
            sid, cid = f"s{p}.{k}", f"c{p}.{k}"
            records.append({"kind": "path", "id": sid, "conversation_graph": gid, "node_ids": [str(n) for n in path],
                            "sampler": "algorithm1", "seed": p, "index": k})
            messages = realise_conversation(cg, path, APIS, seed=k)
            records.append({"kind": "conversation", "id": cid, "procedure": pid, "path": sid, "mode": "offline",
                            "messages": messages, "noise_kinds": ["digression"] if k == 0 else [],
                            "tests": extract_tests(messages)})
    return {"format": "almita", "version": 1, "records": records}

"""The fidelity audit (issue #28 item 3): every offline conversation of every case passes it, and
each kind of defect the issue reports is caught, counted per test."""
from __future__ import annotations

import json

import networkx as nx

from generation.pipeline.apis import ApiSpec, ParamSpec
from generation.pipeline.audit import audit_conversation, summary, findings_for_test
from generation.pipeline.build import build_offline
from generation.pipeline.extract import extract_tests

from .offline_cases import all_cases


def test_every_offline_conversation_of_every_case_passes_the_audit():
    audited = 0
    for name, g, apis in all_cases():
        result = build_offline(g, apis, paths=None, sampler="coverage", seed=2)
        for conv in result.conversations:
            found = audit_conversation(conv["messages"], apis, result.conversation_graph, conv["path"])
            assert found == [], (name, found[:3])
            audited += 1
    assert audited > 50


def _case():
    api = ApiSpec("findFlat", params=[ParamSpec("city"), ParamSpec("balcony", "str", enum=["Yes", "No"])],
                  outputs=[ParamSpec("is_find", "str", enum=["can be found", "cannot be found"])])
    g = nx.DiGraph(kind="conversation")
    for n, t, label in [("a", "assistant", "hi"), ("u", "user", "x"), ("p", "api", "findFlat"), ("b", "assistant", "x")]:
        g.add_node(n, type=t, label=label)
    g.add_edge("a", "u", label="")
    g.add_edge("u", "p", label="")
    g.add_edge("p", "b", label="Apartment is not available")
    msgs = [{"role": "user", "content": "A flat in Leeds with a balcony, please: Yes."},
            {"role": "api", "content": "findFlat(city='Leeds', balcony='Yes')"},
            {"role": "api_output", "content": json.dumps({"is_find": "cannot be found"})},
            {"role": "assistant", "content": "I am sorry, there is no flat free in Leeds."}]
    return api, g, msgs


def test_a_clean_conversation_has_no_findings_and_each_defect_is_found_where_it_is():
    api, g, msgs = _case()
    path = ["a", "u", "p", "b"]
    assert audit_conversation(msgs, [api], g, path) == []
    bad = [dict(m) for m in msgs]
    bad[2]["content"] = json.dumps({"is_find": "can be found"})            # the contradiction
    bad[1]["content"] = "findFlat(city='until', balcony='Maybe')"          # a random word, not an enum value
    bad[3]["content"] = "Let me subgoal: tell the user is_find. Do you are satisfied?"
    found = audit_conversation(bad, [api], g, path)
    kinds = {(f.kind, f.index) for f in found}
    assert ("outcome", 2) in kinds and ("value", 1) in kinds and ("speech", 3) in kinds
    assert sum(f.kind == "value" for f in found) == 2  # 'until' never said, 'Maybe' not in the enum
    tests = extract_tests(bad)
    per_test = [findings_for_test(found, t["position"]) for t in tests]
    counts = summary(per_test)
    assert counts["tests"] == len(tests) == 2 and counts["failed"] == 2
    assert counts["failed_by_kind"] == {"outcome": 1, "value": 2, "speech": 1}

import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generation.pipeline.apis import parse_api_list
from generation.pipeline.convert import flowgraph_to_conversation_graph
from generation.pipeline.extract import ApiCallParseError, extract_tests, parse_api_call
from generation.pipeline.formats import parse_graph_text
from generation.pipeline.noise import add_noise
from generation.pipeline.realise import build_conversation_prompt, realise_conversation
from generation.pipeline.sampling import (SamplingError, coverage, min_edge_cover_lower_bound, sample,
                                         sample_paths)
from generation.pipeline.validate import validate_conversation

from .conftest import fixture_text
from .strategies import flowgraphs


def check_path(g, path, max_loops):
    roots = [n for n in g if g.in_degree(n) == 0]
    assert path[0] == roots[0]
    assert all(g.has_edge(a, b) for a, b in zip(path, path[1:]))
    assert g.out_degree(path[-1]) == 0
    assert max(Counter(path).values()) <= max_loops + 1


@settings(max_examples=50, deadline=None)
@given(flowgraphs(), st.sampled_from(["algorithm1", "random", "coverage"]), st.integers(0, 2))
def test_paths_start_at_root_follow_edges_end_at_leaf_and_respect_loop_bound(fg, sampler, max_loops):
    g = flowgraph_to_conversation_graph(fg[0])
    res = sample(g, 8, sampler=sampler, seed=3, max_loops=max_loops)
    paths = res.paths
    assert len({tuple(p) for p in paths}) == len(paths)  # distinct
    if res.minimum is not None and res.minimum > 8:  # --paths N means N, or says why not
        assert len(paths) == res.minimum and "covering every edge takes" in res.note
    elif res.distinct_available is not None:  # the graph has fewer: all of them, and says so
        assert len(paths) == res.distinct_available < 8 and "only" in res.note
    else:
        assert len(paths) == 8 and res.note == ""
    for p in paths:
        check_path(g, p, max_loops)
    assert paths == sample_paths(g, 8, sampler=sampler, seed=3, max_loops=max_loops)


@settings(max_examples=50, deadline=None)
@given(flowgraphs(max_nodes=40))
def test_coverage_sampler_covers_every_reachable_edge(fg):
    g = add_noise(flowgraph_to_conversation_graph(fg[0]), 0.3, seed=1)
    paths = sample_paths(g, 0, sampler="coverage")
    cov = coverage(g, paths)
    assert cov["edge_coverage"] == 1.0 and cov["node_coverage"] == 1.0
    assert len(paths) >= min_edge_cover_lower_bound(g)


def test_coverage_sampler_meets_the_exact_minimum_on_the_paper_graph():
    g = parse_graph_text(fixture_text("a5_conversation_graph.txt"))
    paths = sample_paths(g, 0, sampler="coverage")
    assert len(paths) == min_edge_cover_lower_bound(g) == 2
    padded = sample(g, 5, sampler="coverage")  # the graph has only 4 distinct bounded paths
    assert len(padded.paths) == 4 and padded.paths[:2] == paths and padded.distinct_available == 4
    assert "only 4 distinct paths" in padded.note
    assert len({tuple(p) for p in padded.paths}) == 4
    three = sample(g, 3, sampler="coverage")
    assert len(three.paths) == 3 and three.note == ""
    one = sample(g, 1, sampler="coverage")  # below the cover: the cover, and it says so
    assert one.paths == paths and one.minimum == 2
    assert one.note.startswith("1 paths requested but covering every edge takes 2")


def test_walk_samplers_return_distinct_paths_and_all_of_them_when_the_graph_has_fewer():
    g = parse_graph_text(fixture_text("a5_conversation_graph.txt"))
    for sampler in ("algorithm1", "random"):
        res = sample(g, 10, sampler=sampler, seed=1)
        assert len(res.paths) == 4 == res.distinct_available
        assert len({tuple(p) for p in res.paths}) == 4
        assert "only 4 distinct paths" in res.note
        assert sample(g, 3, sampler=sampler, seed=1).note == ""
    with pytest.raises(SamplingError):
        sample(g, -1)


def test_algorithm1_weights_beat_a_plain_random_walk_on_coverage():
    from generation.pipeline.synth import random_flowgraph

    g = flowgraph_to_conversation_graph(random_flowgraph(40, 11, back_edge_p=0.0)[0])
    def mean_cov(sampler):
        return sum(coverage(g, sample_paths(g, 6, sampler, seed=s))["node_coverage"] for s in range(30)) / 30
    assert mean_cov("algorithm1") > mean_cov("random")


def test_sampling_errors():
    g = parse_graph_text("[N0](assistant){a}\n[N1](user){b}\n[E0](N0, N1){}\n[E1](N1, N0){}")
    with pytest.raises(SamplingError):
        sample_paths(g, 1)
    with pytest.raises(SamplingError):
        sample_paths(parse_graph_text(fixture_text("a5_conversation_graph.txt")), 1, sampler="dfs")


@settings(max_examples=40, deadline=None)
@given(flowgraphs(), st.integers(0, 1000), st.floats(0, 0.5))
def test_realised_conversations_pass_the_checker_and_tests_have_the_right_shape(fg, seed, noise):
    flow, apis = fg
    g = add_noise(flowgraph_to_conversation_graph(flow), noise, seed)
    for i, path in enumerate(sample_paths(g, 3, seed=seed)):
        messages = realise_conversation(g, path, apis, seed=seed + i)
        assert validate_conversation(messages, apis) == []
        tests = extract_tests(messages)
        for t in tests:
            assert t["context"] == messages[: t["position"]]
            assert t["context"][-1]["role"] in ("user", "api_output")
            assert messages[t["position"]]["role"] in ("assistant", "api")
        # every agent action after a user/api_output turn yields exactly one test
        expected = sum(1 for k in range(1, len(messages)) if messages[k]["role"] in ("assistant", "api")
                       and messages[k - 1]["role"] in ("user", "api_output"))
        assert len(tests) == expected


def test_realisation_follows_the_branch_taken_and_retries_with_new_values():
    g = parse_graph_text(fixture_text("a5_conversation_graph.txt"))
    apis = parse_api_list({"apis": [
        {"name": "get_order_details", "params": [{"order_id": "int"}], "output": {"name": "found", "type": "bool"}},
        {"name": "cancel_order", "params": [{"order_id": "int"}], "output": "dict"},
        {"name": "refund_order", "params": [{"order_id": "int"}], "output": "dict"}]})
    path = ["N0", "N1", "N2", "N3", "N4", "N6", "N7", "N4", "N5", "N8", "N9", "N10"]
    msgs = realise_conversation(g, path, apis, seed=5)
    assert msgs[0] == {"role": "user", "content": "Didn't receive my order."}  # greeting skipped
    outputs = [json.loads(m["content"]) for m in msgs if m["role"] == "api_output"]
    assert outputs[0] == {"found": False} and outputs[1] == {"found": True}
    calls = [parse_api_call(m["content"]) for m in msgs if m["role"] == "api"]
    assert calls[0][1]["order_id"] != calls[1][1]["order_id"]  # "gives another order id"
    assert calls[2] == ("cancel_order", {"order_id": calls[1][1]["order_id"]})
    assert realise_conversation(g, path, apis, seed=5) == msgs


def test_a6_example_extracts_the_expected_tests():
    msgs = json.loads(fixture_text("a6_conversation.json"))
    tests = extract_tests(msgs)
    assert [t["position"] for t in tests] == [1, 3, 5]
    assert tests[1]["expected"] == {"type": "api_call", "name": "get_order_details", "parameters": {"order_id": 812}}
    assert tests[2]["expected"] == {"type": "reply", "content": "I couldn't find your order."}
    assert tests[2]["context"] == msgs[:5]


@pytest.mark.parametrize("text, expected", [
    ("get_order(order_id=812)", ("get_order", {"order_id": 812})),
    ("f(a='x', b=[1, 2], c=true, d=None)", ("f", {"a": "x", "b": [1, 2], "c": True, "d": None})),
    ('f({"a": 1})', ("f", {"a": 1})),
    ("api.f(x=abc)", ("f", {"x": "abc"})),
    ("ping", ("ping", {})),
])
def test_parse_api_call(text, expected):
    assert parse_api_call(text) == expected


@pytest.mark.parametrize("text", ["f(1)", "f(**k)", "not a call(", "1 + 2"])
def test_parse_api_call_rejects(text):
    with pytest.raises(ApiCallParseError):
        parse_api_call(text)


def test_prompt_builder_carries_graph_apis_and_path():
    g = parse_graph_text(fixture_text("a5_conversation_graph.txt"))
    apis = parse_api_list(json.loads(fixture_text("a6_apis.json")))
    system, user = build_conversation_prompt(g, ["N0", "N1", "N2"], apis)
    assert system["role"] == "system" and "api_output" in system["content"]
    assert user["role"] == "user" and "[N4](api){get_order_details}" in user["content"]
    assert '"name": "get_order_details"' in user["content"] and user["content"].endswith("path: [N0, N1, N2]")


def test_dict_of_str_output_holds_only_strings_even_for_int_ids():
    """An int parameter echoed into a dict[str, str] output must become a string (CV-OUTPUT-TYPE)."""
    import random as _random

    from generation.pipeline.apis import ApiSpec as _Api, ParamSpec as _Param
    from generation.pipeline.realise import _output_value
    from generation.pipeline.typecheck import matches

    api = _Api(name="find_order", params=[_Param("order_id", "int"), _Param("email", "str")],
               output_name="order", output_type="dict[str, str]")
    value = _output_value(api, "Order found", {"order_id": 812, "email": "a@b.org"}, _random.Random(0))
    assert value["order_id"] == "812" and matches(value, "dict[str, str]")
    untyped = _Api(name="find", params=[_Param("order_id", "int")], output_name="o", output_type="dict")
    assert _output_value(untyped, "found", {"order_id": 812}, _random.Random(0))["order_id"] == 812

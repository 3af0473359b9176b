"""Issue #28 item 2: offline conversations agree with their graph, their values mean something and
their turns are speech. Every offline test of every sampled path of every fixture (the paper's
charts, the FlowBench-style records, the STAR task flows and tau2-bench workflows of the shared
data) is judged by checkers written separately from the generator (``outcome_oracle``,
``speech_oracle``)."""
from __future__ import annotations

import json
import re

import pytest
from faker.providers.lorem.en_US import Provider as Lorem

from generation.pipeline.build import build_offline
from generation.pipeline.extract import parse_api_call
from generation.pipeline.schema import ParamSpec, default_from_text, enum_from_text
from generation.pipeline.speech import assistant_says
from generation.pipeline.values import ValueMaker

from .offline_cases import all_cases, shared_node_texts
from .outcome_oracle import verdicts
from .speech_oracle import problems

CASES = all_cases()
RUNS = [("coverage", 0.0, 0), ("algorithm1", 0.2, 1), ("algorithm1", 0.0, 7)]
# A random dictionary word is one of Faker's lorem words; a colour asked for as a colour is not random.
LOREM = set(Lorem.word_list) - {"black", "white", "red", "blue", "green", "yellow", "gray", "grey", "purple",
                                "maroon", "navy", "olive", "silver", "teal", "fuchsia", "aqua", "lime"}


@pytest.fixture(scope="module")
def built():
    out = []
    for name, g, apis in CASES:
        for sampler, noise, seed in RUNS:
            out.append((name, apis, build_offline(g, apis, paths=None, sampler=sampler, noise=noise, seed=seed)))
    return out


def test_the_cases_include_every_fixture_and_the_shared_data():
    names = [n for n, _, _ in CASES]
    assert "a4" in names and sum(n.startswith(("ferry", "two", "oddities")) for n in names) == 7
    if any(n.startswith("star/") for n in names):
        assert sum(n.startswith("star/") for n in names) >= 20 and sum(n.startswith("tau2/") for n in names) == 3


def test_no_api_output_contradicts_the_branch_taken(built):
    counts = {"agrees": 0, "contradicts": 0, "undecided": 0}
    bad = []
    for name, apis, result in built:
        tests_by_conv = {t["conversation_id"] for t in result.tests}
        for conv in result.conversations:
            assert conv["id"] in tests_by_conv  # every conversation yields tests
            for v, label, output in verdicts(result.conversation_graph, conv["path"], conv["messages"], apis):
                counts[v] += 1
                if v == "contradicts":
                    bad.append((name, label, output))
        for t in result.tests:  # and every test's context carries the same outputs
            for m in t["context"]:
                if m["role"] == "api_output":
                    json.loads(m["content"])
    assert bad == [], bad[:5]
    assert counts["agrees"] > 10 * max(1, counts["undecided"]), counts


def test_argument_values_are_grounded_and_never_random_words(built):
    seen = 0
    for name, apis, result in built:
        specs = {a.name: a for a in apis}
        for conv in result.conversations:
            msgs = conv["messages"]
            for i, m in enumerate(msgs):
                if m["role"] != "api":
                    continue
                api_name, args = parse_api_call(m["content"])
                before = " ".join(x["content"] for x in msgs[:i] if x["role"] in ("user", "api_output"))
                for key, value in args.items():
                    p = specs[api_name].param(key) if api_name in specs else None
                    if not isinstance(value, str):
                        continue
                    seen += 1
                    assert value in before, (name, key, value)  # said earlier in the dialogue
                    allowed = [str(e) for e in (p.enum + p.examples if p else [])]
                    allowed += [str(p.default)] if p and p.default is not None else []
                    if p and p.enum:
                        assert value in allowed, (name, key, value, allowed)
                    if value not in allowed:
                        assert not (re.fullmatch(r"[a-z]+", value) and value in LOREM), (name, key, value)
    assert seen > 100


def test_values_follow_the_schema_order():
    vm = ValueMaker(5)
    assert enum_from_text("Whether it is free, for example[true, false]") == ["true", "false"]
    assert default_from_text('Price of the ticket, default "18 yuan"') == "18 yuan"
    assert vm.value(ParamSpec("is_free", "bool", description="for example[true, false]",
                              enum=enum_from_text("for example[true, false]"))) in (True, False)
    assert vm.value(ParamSpec("fare", "str", description='default "18 yuan"', default="18 yuan")) == "18 yuan"
    assert vm.value(ParamSpec("seat", "str", examples=["12A", "14C"])) in ("12A", "14C")
    code = vm.value(ParamSpec("voucher", "str", pattern=r"^[A-Z]{3}-\d{4}$"))
    assert re.fullmatch(r"[A-Z]{3}-\d{4}", code)
    assert 3 <= vm.value(ParamSpec("guests", "int", minimum=3, maximum=10)) <= 10
    assert vm.value(ParamSpec("when", "str", format="date-time")).endswith("Z")
    assert vm.value(ParamSpec("need_price", "str")) in ("Yes", "No")  # the need_price='until'
    assert re.fullmatch(r"\d{4}", vm.value(ParamSpec("card_last_digits", "str")))  # and card_last_digits='well'
    for name in ("need_price", "card_last_digits", "NeedParking", "LockManufacturer", "ColorOfTopCable", "zzq"):
        value = str(vm.value(ParamSpec(name, "str")))
        assert value not in LOREM, (name, value)


def test_every_node_text_of_the_shared_data_is_said_without_scaffolding():
    maker = ValueMaker(11)
    texts = shared_node_texts()
    assert len(texts) > (1000 if any(n.startswith("star/") for n, _, _ in CASES) else 40)
    found = []
    for text in texts:
        said = assistant_says(text, [], None, {}, lambda n, t: maker.value(ParamSpec(n, t)))
        found += problems(said)
    assert found == [], found[:10]


def test_every_turn_of_every_conversation_is_speech(built):
    found = []
    for name, apis, result in built:
        tools = [a.name for a in apis]
        for conv in result.conversations:
            for m in conv["messages"]:
                if m["role"] in ("assistant", "user"):
                    found += [f"{name}: {p}" for p in problems(m["content"], tools)]
    assert found == [], found[:10]


@pytest.mark.parametrize("text,expected", [
    ("Subgoal: ask for the budget", "Could you please give me the budget?"),
    ("Subgoal: let me check the price", "Let me check the price."),
    ("The price is 20,000 RMB. Let me know if it suits", "The price is 20,000 RMB."),
    ("Step 3.1: Verify Network Service Status", "Let me verify network service status."),
    ("Ask if the user is satisfied", "Are you satisfied?"),
])
def test_the_reported_defects_are_gone(text, expected):
    said = assistant_says(text, [])
    assert problems(said) == [], said
    if expected:
        assert said.startswith(expected), said

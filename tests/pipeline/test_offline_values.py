"""Offline conversations honour the specs: enumerations, types, output schemas, the branch taken."""
from __future__ import annotations

import json

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from generation.pipeline.apis import ApiSpec, ParamSpec
from generation.pipeline.build import build_offline
from generation.pipeline.consistency import judge, outcome_violations
from generation.pipeline.extract import parse_api_call
from generation.pipeline.speech import assistant_says, user_says
from generation.pipeline.typecheck import matches
from generation.pipeline.values import ValueMaker

NAMES = ["order_id", "email", "hotel_name", "need_room", "is_elevator", "refund_reason", "check_in_date",
         "customer_name", "amount", "city", "notes", "vip", "tags", "plan_code"]
TYPES = ["str", "int", "float", "bool", "list[str]", "list[int]", "Optional[str]", "dict"]
ENUMS = [[], ["Yes", "No"], ["true", "false"], ["Economy", "Business", "First"], ["1", "2", "3"]]


@st.composite
def params(draw, prefix: str = "") -> ParamSpec:
    name = prefix + draw(st.sampled_from(NAMES))
    ptype = draw(st.sampled_from(TYPES))
    enum = draw(st.sampled_from(ENUMS)) if ptype in ("str", "int") else []
    if ptype == "int" and enum and not all(e.isdigit() for e in enum):
        enum = []
    described = draw(st.booleans())
    desc = f"Enumeration type, [{', '.join(enum)}]" if enum and described else ""
    props = []
    if ptype == "dict":
        props = [ParamSpec("code", "str"), ParamSpec("count", "int")]
    return ParamSpec(name, ptype, draw(st.booleans()), desc, [] if described else list(enum), None, props)


@st.composite
def apis(draw) -> ApiSpec:
    ins = {p.name: p for p in draw(st.lists(params(), min_size=1, max_size=4))}
    outs = {p.name: p for p in draw(st.lists(params("out_"), min_size=0, max_size=4))}
    for p in [*ins.values(), *outs.values()]:
        if p.description and not p.enum:
            p.enum = [v.strip() for v in p.description.split("[", 1)[1].rstrip("]").split(",")]
    return ApiSpec(draw(st.sampled_from(["findThing", "book_it", "checkStatus"])), "", list(ins.values()),
                   "result", draw(st.sampled_from(["dict", "bool", "list[str]"])), list(outs.values()))


def _flowgraph(api: ApiSpec, ok: str, bad: str) -> nx.DiGraph:
    g = nx.DiGraph(kind="flowgraph")
    for n, t, label in [("N0", "start_message", "Greet the customer"), ("N1", "message", "Ask for the details"),
                        ("N2", "api", api.name), ("N3", "end_message", "Tell the customer it worked"),
                        ("N4", "end_message", "Apologise: it did not work")]:
        g.add_node(n, type=t, label=label)
    for k, (u, v, label) in enumerate([("N0", "N1", "I need help"), ("N1", "N2", "Here are my details"),
                                       ("N2", "N3", ok), ("N2", "N4", bad)]):
        g.add_edge(u, v, id=f"E{k}", label=label)
    return g


def _enum_ok(p: ParamSpec, value) -> bool:
    return not p.enum or str(value) in [str(e) for e in p.enum] or (
        isinstance(value, bool) and str(value).lower() in [str(e).lower() for e in p.enum])


@settings(max_examples=60, deadline=None)
@given(api=apis(), seed=st.integers(0, 10**6),
       labels=st.sampled_from([("Found", "Not found"), ("Booked", "Failed"), ("Available", "Full")]))
def test_offline_conversations_satisfy_enumerations_types_and_output_schemas(api, seed, labels):
    result = build_offline(_flowgraph(api, *labels), [api], paths=None, sampler="coverage", seed=seed)
    assert not [v for v in result.violations if v.severity == "error"], result.violations
    seen_branches = set()
    for conv in result.conversations:
        msgs = conv["messages"]
        for i, m in enumerate(msgs):
            if m["role"] == "api":
                name, args = parse_api_call(m["content"])
                assert name == api.name
                for p in api.params:
                    if p.name in args:
                        assert matches(args[p.name], p.type), (p, args[p.name])
                        assert _enum_ok(p, args[p.name]), (p, args[p.name])
                out = json.loads(msgs[i + 1]["content"])
                if api.outputs:
                    assert set(out) <= {p.name for p in api.outputs}
                    for p in api.outputs:
                        if p.name in out:
                            assert matches(out[p.name], p.type) and _enum_ok(p, out[p.name]), (p, out)
        assert not [v for v in outcome_violations(result.conversation_graph, conv["path"], msgs, [api])[0]]
        seen_branches.add(conv["path"][-1])
    assert len(seen_branches) == 2  # both outcomes were realised


def test_values_come_from_the_spec_not_word_lists():
    vm = ValueMaker(3)
    assert vm.value(ParamSpec("is_elevator", "str", description="Enumeration type, [Yes, No]",
                              enum=["Yes", "No"])) in ("Yes", "No")
    rooms = vm.value(ParamSpec("need_room", "int", description="Number of bedrooms"))
    assert 1 <= rooms <= 5
    hotel = vm.value(ParamSpec("hotel_name", "str"))
    person = vm.value(ParamSpec("customer_name", "str"))
    assert "Hotel" in hotel and hotel != person and person.count(" ") >= 1
    assert vm.value(ParamSpec("plan_code", "str", description='Flight ID, such as "CA1234, CZ5678"')) in (
        "CA1234", "CZ5678")
    email = vm.value(ParamSpec("email", "str"))
    assert email.startswith(person.split()[0].lower())  # one person per conversation
    d1, d2 = vm.value(ParamSpec("check_in_date", "str")), vm.value(ParamSpec("check_out_date", "str"))
    assert d1 < d2  # dates move forward
    assert vm.value(ParamSpec("refund_reason", "str")).count(" ") >= 3  # a sentence, not 'amber-20'


def test_not_found_branch_gets_a_negative_output_and_found_a_positive_one():
    api = ApiSpec("findOrder", params=[ParamSpec("order_id")],
                  outputs=[ParamSpec("exists", "str", enum=["true", "false"]), ParamSpec("items", "list[str]"),
                           ParamSpec("detail", "str")])
    result = build_offline(_flowgraph(api, "Order found", "Order not found"), [api], sampler="coverage")
    outs = {}
    for conv in result.conversations:
        msgs = conv["messages"]
        out = json.loads(next(msgs[i + 1]["content"] for i, m in enumerate(msgs) if m["role"] == "api"))
        outs[conv["path"][-1]] = out
    found = next(o for o in outs.values() if o.get("exists") == "true")
    missing = next(o for o in outs.values() if o.get("exists") == "false")
    assert found["items"] and "detail" in found
    assert missing["items"] == [] and "detail" not in missing


def test_the_rule_flags_an_output_that_contradicts_the_branch():
    api = ApiSpec("findOrder", params=[ParamSpec("order_id")], outputs=[ParamSpec("exists", "bool")])
    g = nx.DiGraph(kind="conversation")
    for n, t, label in [("a", "assistant", "hi"), ("u", "user", "x"), ("p", "api", "findOrder"),
                        ("b", "assistant", "sorry")]:
        g.add_node(n, type=t, label=label)
    g.add_edge("a", "u", label="")
    g.add_edge("u", "p", label="")
    g.add_edge("p", "b", label="Order not found")
    msgs = [{"role": "user", "content": "order 5"}, {"role": "api", "content": "findOrder(order_id='5')"},
            {"role": "api_output", "content": '{"exists": true}'}, {"role": "assistant", "content": "sorry"}]
    found, undecided = outcome_violations(g, ["a", "u", "p", "b"], msgs, [api])
    assert [v.rule for v in found] == ["CV-OUTCOME"] and found[0].severity == "warning" and not undecided
    msgs[2]["content"] = '{"exists": false}'
    assert outcome_violations(g, ["a", "u", "p", "b"], msgs, [api])[0] == []
    plain = ApiSpec("findOrder", params=[ParamSpec("order_id")])  # output 'dict' decides nothing
    msgs[2]["content"] = '{"result": {"status": "ok"}}'
    found, undecided = outcome_violations(g, ["a", "u", "p", "b"], msgs, [plain])
    assert found == [] and len(undecided) == 1 and judge(undecided[0]) is None


def test_assistant_speaks_and_user_answers():
    said = assistant_says("Ask the user for the order number, then call findOrder", ["findOrder"])
    assert said == "Could you please give me the order number?"
    assert "findOrder" not in assistant_says("Use findOrder and tell the customer the result", ["findOrder"])
    assert assistant_says("Greet the customer", []) == "Hello! How can I help you today?"
    assert user_says("User books again") == "I'd like to book again."
    assert user_says("Yes") == "Yes, please." and user_says("Book a flight") == "Hi, I'd like to book a flight."


def test_ranges_examples_and_questions_read_from_the_chart_and_specs():
    vm = ValueMaker(1)
    assert 1 <= vm.value(ParamSpec("hours", "int", description="whole hours from 1 to 12")) <= 12
    assert vm.value(ParamSpec("card_number", "str", description='Card, such as "4111 2222, 5500 1234"')) in (
        "4111 2222", "5500 1234")
    dated = ParamSpec("when", "str", description='For example, "12 oclock on January 7, 2199"')
    assert vm.value(dated) == "12 oclock on January 7, 2199"
    assert assistant_says("Ask if the user wants another bike", []) == "Would you like another bike?"
    assert assistant_says("The user is welcome to come back any time", []) == "You are welcome to come back any time."

"""One answer, every agent kind, one canonical action and the same flags (issue #27, item 1).

Hypothesis draws what an agent means to do (a reply, or a call to an offered API, to one that
differs only in case, to one that is not offered, to an offered API named like a reply synonym)
with typed arguments, and an expected action. Each agent kind then says it in one of the shapes
it may use, through its real transport: the A.8 JSON prompt and native function calling and an
own-prompt model through the fake OpenAI server, an HTTP agent through a local almita-agent/1
server inside the product, and the standalone runner's client against the same server. Every
kind must yield the same canonical action as reading the intent directly, and judging must give
the same per-test flags and reason in the product and the runner.
"""
from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation import agent_kinds, services
from evaluation import reader as R
from evaluation import similarity as S
from evaluation.http_agent import HttpAgent
from evaluation.models import AgentMode
from evaluation.runner import core
from tests.evaluation.http_agents import AgentServer
from tests.fake_openai import Reply, fake_openai, openai_settings  # noqa: F401 - fixtures

APIS = [
    {"name": "get_order_details", "desc": "Look an order up", "params": [{"name": "order_id", "type": "int"}]},
    {"name": "send_message", "desc": "Send the customer a text message", "params": [{"name": "text", "type": "str"}]},
    {"name": "refund_order", "desc": "Refund an order",
     "params": [{"name": "order_id", "type": "int"}, {"name": "reason", "type": "str"}]},
]
OFFERED = [a["name"] for a in APIS]
NAMES = OFFERED + ["Get_Order_Details", "SEND_MESSAGE", "greet", "lookup_user"]
WORDS = ["order", "your", "please", "id", "refund", "the", "is", "late", "could", "you", "give", "me", "812"]

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.floats(-1e3, 1e3, allow_nan=False),
                    st.sampled_from(["812", "0812", "true", "null", "", "Damaged", " damaged "]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.sampled_from("abc"), inner, max_size=2)),
                      max_leaves=5)
arguments = st.dictionaries(st.sampled_from(["order_id", "reason", "text", "note"]), values, max_size=3)
intents = st.one_of(st.builds(lambda t: ("reply", t), texts),
                    st.builds(lambda n, a: ("call", n, a), st.sampled_from(NAMES), arguments))
expecteds = st.one_of(st.builds(lambda t: {"type": "reply", "content": t}, texts),
                      st.builds(lambda n, a: {"type": "api_call", "name": n, "parameters": a},
                                st.sampled_from(OFFERED), arguments))


def call_texts(name: str, args: dict) -> list[str]:
    """The ways a call is written as text (A.8 prompt answers, JSON in message content)."""
    a = json.dumps(args)
    return [json.dumps({"type": name, "parameters": args}),
            json.dumps({"type": "api_call", "name": name, "arguments": args}),
            json.dumps({"type": "api_call", "name": name, "arguments": a}),
            json.dumps({"type": "function_call", "name": name, "parameters": args}),
            json.dumps({"type": "tool_use", "name": name, "input": args}),
            json.dumps({"name": name, "arguments": args}),
            json.dumps({"tool_calls": [{"type": "function", "function": {"name": name, "arguments": a}}]}),
            json.dumps({"type": "api_call", "parameters": {"name": name, "parameters": args}}),
            f"I will look it up.\n```json\n{json.dumps({'type': name, 'parameters': args})}\n```"]


def tool_call(name: str, args: dict) -> dict:
    return {"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


TEXT_SHAPES, HTTP_SHAPES = 9, 5  # len(call_texts(...)), len(http) below
picks = st.fixed_dictionaries({"text": st.sampled_from(range(TEXT_SHAPES)), "http": st.sampled_from(range(HTTP_SHAPES)),
                               "native": st.booleans()})


def renderings(intent, pick: dict) -> dict[str, object]:
    """What each kind sends for `intent`; `pick` chooses among the shapes each kind may use."""
    if intent[0] == "reply":
        text = intent[1]
        prompt = [json.dumps({"type": "reply", "parameters": {"content": text}}),
                  json.dumps({"type": "reply", "content": text})]
        http = [{"role": "assistant", "content": text}, {"type": "reply", "content": text},
                {"choices": [{"message": {"role": "assistant", "content": text}}]}]
        return {"prompt": prompt[pick["text"] % 2], "functions": Reply(content=text), "own": Reply(content=text),
                "http": http[pick["http"] % 3]}
    name, args = intent[1], intent[2]
    written = call_texts(name, args)
    native = Reply(content=None, tool_calls=[{"name": name, "arguments": json.dumps(args)}])
    in_content = Reply(content=written[pick["text"]])
    http = [{"role": "assistant", "content": None, "tool_calls": [tool_call(name, args)]},
            {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [tool_call(name, args)]}}]},
            {"type": "api_call", "name": name, "parameters": args},
            {"name": name, "arguments": args},
            {"role": "assistant", "content": written[pick["text"]]}]
    assert len(written) == TEXT_SHAPES and len(http) == HTTP_SHAPES
    return {"prompt": written[pick["text"]], "functions": native if pick["native"] else in_content,
            "own": in_content if pick["native"] else native, "http": http[pick["http"]]}


def direct(intent) -> dict:
    return R.reply(intent[1]) if intent[0] == "reply" else R.call(intent[1], intent[2], OFFERED)


FLAGS = ("reply_recalled", "reply_correct", "api_recalled", "api_correct", "params_correct", "correct")


def test_every_agent_kind_reads_the_same_answer_the_same_way(db, fake_openai, openai_settings):
    current: dict[str, object] = {}
    fake_openai.set_handler(lambda body, n: current["llm"])
    agents = {
        "prompt": services.agent_create(name="json", mode=AgentMode.PROMPT, model="fake-model"),
        "functions": services.agent_create(name="fc", mode=AgentMode.FUNCTIONS, model="fake-model"),
        "own": agent_kinds.agent_create_own_prompt(name="own", system_prompt="You are Shopbot.", model="fake-model"),
    }
    lexical = S.get_scorer("lexical")
    with AgentServer(lambda body: (200, json.dumps(current["http"]).encode(), 0.0)) as server:
        agents["http"] = agent_kinds.agent_create_http(name="http", url=server.url, retries=0)
        runner_client = HttpAgent(url=server.url, retries=0)

        @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
        @given(intent=intents, expected=expecteds, pick=picks)
        def check(intent, expected, pick):
            data = {"test_id": 1, "conversation_id": 1, "position": 1, "procedure": "Help the customer.",
                    "apis": APIS, "context": [{"role": "user", "content": "Hello"}], "expected": expected}
            want = direct(intent)
            shapes = renderings(intent, pick)
            judged = {}
            for kind, agent in agents.items():
                if kind == "http":
                    current["http"] = shapes["http"]
                else:
                    current["llm"] = Reply(content=shapes["prompt"]) if kind == "prompt" else shapes[kind]
                action = services.agent_answer(agent, data).action
                assert action == want, (kind, shapes[kind] if kind != "prompt" else shapes["prompt"])
                outcome = services.judge_answer(data, action, scorer=lexical, threshold=0.55)
                judged[kind] = tuple(getattr(outcome, f) for f in FLAGS) + (outcome.reason,)
            current["http"] = shapes["http"]
            record = core.record_for(data, runner_client.ask(data).action, threshold=0.55)
            judged["runner"] = tuple(record[f] for f in FLAGS) + (record["reason"],)
            assert len(set(judged.values())) == 1, judged

        check()

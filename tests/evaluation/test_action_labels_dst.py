"""ToolDial done right (issue #27 item 7): action labels asked of the agent's model or given by the
rules, recorded on the run; the dialogue state with api_confirmed and values taken from API
outputs. Runs go through the fake OpenAI server; every expected figure is worked out by hand."""
from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from evaluation import dialogue_actions as DA
from evaluation import dst as D
from evaluation import services
from evaluation.models import AgentMode
from generation.models import LLMCall
from tests.evaluation.test_dialogue_and_trials import ACTIONS_SAID, STATES_SAID, dst_release, which
from tests.fake_openai import Reply, fake_openai, openai_settings  # noqa: F401 - fixtures


@pytest.mark.parametrize("said,label", [
    ("request", "request"), ("Response fail", "response_fail"), ("SYSTEM_BYE.", "system_bye"),
    ('{"action": "call"}', "call"), ("Suggest: offer the refund", "suggest"), ("clarify\nbecause it is vague", "clarify"),
    ("retriever call", "invalid"),  # not an ALMITA action: agents are given their APIs
    ("I would ask for the order id", "invalid"), ("", "invalid"), (None, "invalid"),
])
def test_parse_action_label(said, label):
    assert DA.parse_action_label(said) == label


def test_the_instruction_offers_every_system_action():
    for action in DA.SYSTEM_ACTIONS:
        assert f"- {action}: " in DA.ACTION_INSTRUCTION


# --------------------------------------------------------------------------- dialogue state

U = lambda text: {"role": "user", "content": text}  # noqa: E731
API = lambda text: {"role": "api", "content": text}  # noqa: E731
OUT = lambda obj: {"role": "api_output", "content": json.dumps(obj)}  # noqa: E731
CHAIN = [
    U("Hi, my email is sara@example.com and my order is late."),
    API("find_user_id_by_email(email='sara@example.com')"),
    OUT({"user_id": "sara_doe_496"}),
    API("get_user_details(user_id='sara_doe_496')"),
    OUT({"orders": ["#W1"]}),
    {"role": "assistant", "content": "Your order #W1 is on its way but late."},
    U("That is too late for me."),
    {"role": "assistant", "content": "Would you like me to cancel it?"},
    U("Yes please."),
    API("cancel_pending_order(order_id='#W1', reason='no longer needed')"),
]


def chain_tests() -> list[dict]:
    from generation.pipeline.extract import parse_api_call

    tests = []
    for i, m in enumerate(CHAIN):
        if m["role"] in ("api", "assistant") and CHAIN[i - 1]["role"] in ("user", "api_output"):
            if m["role"] == "api":
                name, params = parse_api_call(m["content"])
                expected = {"type": "api_call", "name": name, "parameters": params}
            else:
                expected = {"type": "reply", "content": m["content"]}
            tests.append({"position": i, "context": CHAIN[:i], "expected": expected})
    return tests


def test_gold_states_carry_api_confirmed_and_values_from_api_outputs():
    states = D.gold_states(chain_tests())
    assert states == [
        # position 1: the user gave the email (before: the same; the old state had no api_confirmed)
        {"api_confirmed": True, "api": "find_user_id_by_email", "slots": {"email": "sara@example.com"},
         "slot_sources": {"email": "user"}},
        # position 3: the user id came from the previous API output, not from the user
        {"api_confirmed": True, "api": "get_user_details", "slots": {"user_id": "sara_doe_496"},
         "slot_sources": {"user_id": "api_output"}},
        # position 5: the agent answers from the output (response) while working towards the cancellation
        {"api_confirmed": True, "api": "cancel_pending_order", "slots": {"order_id": "#W1"},
         "slot_sources": {"order_id": "api_output"}},
        # position 7: the agent proposes the cancellation: no API is confirmed yet (ToolDial's suggest)
        {"api_confirmed": False, "api": None, "slots": {}, "slot_sources": {}},
        # position 9: confirmed; the order id is in the user record returned earlier, the reason nowhere
        {"api_confirmed": True, "api": "cancel_pending_order", "slots": {"order_id": "#W1"},
         "slot_sources": {"order_id": "api_output"}},
    ]


def test_parse_state_reads_both_shapes():
    tooldial = ('{"api_confirmed": "true", "api_status": {"api_name": "get_user_details", '
                '"required_parameters": {"user_id": "sara_doe_496"}, "optional_parameters": {"note": ""}}}')
    assert D.parse_state(tooldial) == {"api": "get_user_details", "slots": {"user_id": "sara_doe_496"},
                                       "api_confirmed": True}
    assert D.parse_state('{"api_confirmed": "false", "api_status": "none"}') == {  # ToolDial's Case 1
        "api": None, "slots": {}, "api_confirmed": False}
    assert D.parse_state('{"api_confirmed": false, "api": null, "slots": {}}') == {
        "api": None, "slots": {}, "api_confirmed": False}
    assert D.parse_state('{"api_confirmed": true, "api_status": {"api_name": "x", "required_parameters": []}}') is None
    assert D.parse_state('{"api": "x", "slots": {}}')["api_confirmed"] is True  # no flag: it names an API
    assert D.parse_state('{"api": null, "slots": {}}')["api_confirmed"] is False


def test_joint_accuracy_needs_api_confirmed_right():
    gold = D.unconfirmed()
    assert D.state_matches(gold, {"api_confirmed": False, "api": None, "slots": {}})
    assert D.state_matches(gold, D.parse_state('{"api_confirmed": "false", "api_status": "none"}'))
    assert not D.state_matches(gold, {"api_confirmed": True, "api": None, "slots": {}})
    confirmed = {"api_confirmed": True, "api": "get_user_details", "slots": {"user_id": "sara_doe_496"}}
    assert D.state_matches(confirmed, {"api": "Get User Details", "slots": {"user_id": "SARA_DOE_496"}})
    assert not D.state_matches(confirmed, {"api_confirmed": False, "api": "get_user_details",
                                           "slots": {"user_id": "sara_doe_496"}})


# --------------------------------------------------------------------------- runs

LABELS_SAID = {  # what the model says comes next     expected -> predicted
    21: "Request",  # request -> request (right)
    22: "call",  # call -> call (right)
    23: "System bye",  # response -> system_bye (wrong)
    24: "I think we should ask for the reason.",  # call -> invalid (wrong: not a label)
}


def labelling_agent(body, n):
    system = body["messages"][0]["content"]
    t = which(body)
    if DA.ACTION_MARKER in system:
        return Reply(content=LABELS_SAID[t])
    if "report the dialogue state" in system:
        said = dict(STATES_SAID[t])
        if t == 23:  # nothing left to call: this agent says so in ToolDial's shape
            said = {"api_confirmed": "false", "api_status": "none"}
        return Reply(content=json.dumps(said))
    return Reply(content=ACTIONS_SAID[t])


@pytest.mark.django_db
def test_a_run_asks_the_model_for_action_labels_and_says_so(fake_openai, openai_settings, client, researcher):
    fake_openai.set_handler(labelling_agent)
    agent = services.agent_create(name="labeller", mode=AgentMode.PROMPT, model="fake-model")
    release = dst_release()
    run = services.run_execute_inline(run=services.run_create(
        agent=agent, release=release, similarity="lexical", action_labels="model", dst=True, start=False), workers=1)
    assert run.action_labels == "model"
    # DST: t21, t22 right as before, and now t23 (api_confirmed false, no API) too: 3/4; slots: tp 2,
    # predicted 2 (t22, t24), gold 3
    dst = run.metrics["dst"]
    assert (dst["joint"], dst["total"]) == (3, 4)
    assert (dst["slot_true_positives"], dst["slot_predicted"], dst["slot_gold"]) == (2, 2, 3)
    assert run.results.get(entry__test_id=23).predicted_state == {"api": None, "slots": {}, "api_confirmed": False}
    actions = run.metrics["actions"]
    assert (actions["correct"], actions["total"]) == (2, 4) and actions["labels_from"] == "model"
    assert actions["matrix"] == {"request": {"request": 1}, "call": {"call": 1, "invalid": 1},
                                 "response": {"system_bye": 1}}
    assert LLMCall.objects.filter(template__endswith="_action").count() == 4  # one question per test
    assert sorted(run.results.values_list("predicted_action", flat=True)) == ["call", "invalid", "request",
                                                                             "system_bye"]
    # the same answers labelled by the rules: t23's "Anything else?" is a bye, t24's question a request
    rules = services.run_execute_inline(run=services.run_create(
        agent=agent, release=release, similarity="lexical", start=False), workers=1)
    assert rules.action_labels == "rules" and rules.metrics["actions"]["labels_from"] == "rules"
    assert rules.metrics["actions"]["matrix"] == {"request": {"request": 1}, "call": {"call": 1, "request": 1},
                                                  "response": {"system_bye": 1}}
    assert LLMCall.objects.filter(template__endswith="_action").count() == 4  # the rules asked nothing
    client.force_login(researcher)
    page = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert "asked of the agent&#x27;s model" in page or "asked of the agent's model" in page
    assert "labelled by the rules" in client.get(reverse("evaluation:run_detail", args=[rules.pk])).content.decode()


@pytest.mark.django_db
def test_action_labels_are_checked(small_release, fake_openai, openai_settings):
    agent = services.agent_create(name="labeller", mode=AgentMode.PROMPT, model="fake-model")
    with pytest.raises(services.EvaluationError, match="unknown action labels 'oracle'"):
        services.run_create(agent=agent, release=small_release, similarity="lexical", action_labels="oracle",
                            start=False)
    http = services.agent_create(name="remote", mode=AgentMode.HTTP, base_url="http://127.0.0.1:9/agent")
    with pytest.raises(services.EvaluationError, match="HTTP agent"):
        services.run_create(agent=http, release=small_release, similarity="lexical", action_labels="model",
                            start=False)


@pytest.mark.django_db
def test_the_command_and_the_api_record_the_labels(small_release, capsys, researcher,
                                                   django_capture_on_commit_callbacks):
    from rest_framework.test import APIClient

    call_command("evaluate", "--release", str(small_release.pk), "--agent", "gold", "--inline",
                 "--action-labels", "model", "--concurrency", "1", "--similarity", "lexical")
    out = capsys.readouterr().out
    # the gold reference answers the expected action: all right, and the report says where labels came from
    assert "action prediction accuracy: 100.0% (10/10); labels: asked of the agent's model" in out
    c = APIClient()
    c.force_authenticate(researcher)
    gold = services.reference_agents_ensure()[0]
    with django_capture_on_commit_callbacks(execute=False):
        r = c.post("/api/evaluation-runs/", {"agent": gold.pk, "release": small_release.pk, "similarity": "lexical",
                                  "action_labels": "model"}, format="json")
    assert r.status_code == 201 and r.json()["action_labels"] == "model", r.content
    bad = c.post("/api/evaluation-runs/", {"agent": gold.pk, "release": small_release.pk, "action_labels": "guess"}, format="json")
    assert bad.status_code == 400 and "action_labels" in bad.json()

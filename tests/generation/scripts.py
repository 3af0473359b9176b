"""Scripted replies of the fake OpenAI server for each generation stage (valid and invalid).

Replies are recognised by a marker from each prompt template, so a handler can answer a whole
job. All texts here are written for these tests.
"""
from __future__ import annotations

import json
import re

from tests.fake_openai import Reply, first_question, prompt_text

MARKERS = {
    "intents": "Invent realistic problems",
    "procedures": "You write the internal procedures",
    "apis": "list the API functions",
    "flowgraph": "into a flowgraph written one element per line",
    "conversation_graph": "Rewrite a flowgraph",
    "conversations": "follow the path exactly",
    "procedure_conversations": "follows the\ngiven procedure",
}

PROCEDURE = """# Renewing a library loan
1. Greet the member and ask for the library card number.
2. Look the loan up with find_loan.
3. If the loan is found, renew it with renew_loan and confirm the new due date.
4. If the loan is not found, tell the member and end the conversation politely.
"""

APIS = {"apis": [
    {"name": "find_loan", "desc": "Find a member's current loan", "params": [{"name": "card_number", "type": "int"}],
     "output": {"name": "loan_id", "type": "int"}},
    {"name": "renew_loan", "desc": "Renew a loan", "params": [{"name": "loan_id", "type": "int"}],
     "output": {"name": "renewed", "type": "bool"}},
]}

FLOWGRAPH = """<flow>
[N0](start_message){Greet the member}
[E0](N0, N1){Wants to renew a loan}
[N1](message){Ask for the library card number}
[E1](N1, N2){Gives the card number}
[N2](api){find_loan}
[N3](api){renew_loan}
[E2](N2, N3){Loan found}
[N4](end_message){Say the loan could not be found}
[E3](N2, N4){Loan not found}
[N5](end_message){Confirm the renewal}
[E4](N3, N5){Renewed}
</flow>"""

# Invalid: the end node has an outgoing edge and one leaf is a plain message.
BAD_FLOWGRAPH = """<flow>
[N0](start_message){Greet the member}
[E0](N0, N1){Wants to renew}
[N1](end_message){Bye}
[E1](N1, N2){Anything}
[N2](message){Dangling}
</flow>"""


def intents_reply(n: int) -> str:
    clients = ["city library", "regional bank", "ferry operator", "dental clinic", "bike rental",
               "music school", "pet insurer", "car wash", "florist", "ski resort", "bakery", "theatre"]
    return json.dumps({"intents": [
        {"client": clients[i % len(clients)], "issue": f"Cannot renew item number {i}", "name": f"renewal problem {i}"}
        for i in range(n)
    ]})


def requested_intents(body: dict) -> int:
    m = re.search(r"Write (\d+) issues", prompt_text(body))
    return int(m.group(1)) if m else 1


def conversation_for(body: dict) -> str:
    """A valid A.6 conversation for the path named in the prompt (follows the found/not found branch)."""
    text = prompt_text(body)
    m = re.search(r"path: \[(.*?)\]", text)
    path = m.group(1) if m else ""
    # In the converted graph, a path through renew_loan is the 'found' branch.
    found = "renew" in _labels_on_path(text, path) if m else "Conversation 1:" in text
    # Name the job item the graph came from, so conversations (and tests) of different procedures differ.
    about = re.search(r"Greet the member about (.*?)\}", text)
    topic = f" ({about.group(1)})" if about else ""
    messages = [
        {"role": "user", "content": f"Hello, I want to renew my loan{topic}. My card number is 55123."},
        {"role": "api", "content": "find_loan(card_number=55123)"},
    ]
    if found:
        messages += [
            {"role": "api_output", "content": json.dumps({"loan_id": 901})},
            {"role": "api", "content": "renew_loan(loan_id=901)"},
            {"role": "api_output", "content": json.dumps({"renewed": True})},
            {"role": "assistant", "content": "Your loan is renewed until the 14th."},
        ]
    else:
        messages += [
            {"role": "api_output", "content": json.dumps({"loan_id": 0})},
            {"role": "assistant", "content": "I could not find a loan on that card."},
        ]
    return json.dumps({"messages": messages})


def conversation_graph_for(body: dict) -> str:
    """A valid A.5 reply: the flowgraph of the prompt, converted, in the bracket format."""
    from generation.pipeline.convert import flowgraph_to_conversation_graph
    from generation.pipeline.formats import parse_graph_text, write_graph_text

    user = body["messages"][-1]["content"]
    text = re.search(r"<flowchart>(.*?)</flowchart>", user, re.DOTALL).group(1)
    return "<flow>\n" + write_graph_text(flowgraph_to_conversation_graph(parse_graph_text(text))) + "</flow>"


def _labels_on_path(text: str, path: str) -> str:
    ids = [p.strip() for p in path.split(",")]
    labels = []
    for node in ids:
        m = re.search(r"\[" + re.escape(node) + r"\]\(\w+\)\{(.*?)\}", text)
        if m:
            labels.append(m.group(1))
    return " ".join(labels)


def _name_and_variant(text: str) -> str:
    name = re.search(r"Name: (.*)", text)
    variant = re.search(r"procedure variant (\d+)", text)
    return f"{name.group(1).strip() if name else 'loan'} v{variant.group(1) if variant else 1}"


def procedure_for(body: dict) -> str:
    """The procedure names its intent and variant, so every later prompt of the job is unique."""
    return PROCEDURE.replace("Renewing a library loan", f"Renewing a library loan [{_name_and_variant(prompt_text(body))}]")


def flowgraph_for(body: dict) -> str:
    tag = re.search(r"Renewing a library loan \[(.*?)\]", prompt_text(body))
    return FLOWGRAPH.replace("{Greet the member}", "{Greet the member about " + (tag.group(1) if tag else "") + "}")


class StageScript:
    """A handler answering every stage validly, except prompts containing a `bad[stage]` text.

    Deciding by content (not by call order) keeps the funnel exact whatever order a pool of
    workers sends the calls in.
    """

    def __init__(self, bad: dict[str, list[str]] | None = None) -> None:
        self.bad = bad or {}

    def __call__(self, body: dict, n: int) -> Reply:
        body = first_question(body)  # a repair turn is answered like its first question
        text = prompt_text(body)
        for stage, marker in MARKERS.items():
            if marker in text:
                break
        else:
            return Reply.client_error(404, "no scripted reply")
        bad = any(b in text for b in self.bad.get(stage, []))
        if stage == "intents":
            want = requested_intents(body)
            if bad:  # one entry lacks its issue
                items = json.loads(intents_reply(want))
                items["intents"][0].pop("issue")
                return Reply(content=json.dumps(items))
            return Reply(content=intents_reply(want))
        if stage == "procedures":
            return Reply(content="Too short." if bad else procedure_for(body))
        if stage == "apis":
            return Reply(content='{"apis": [{"desc": "no name"}]}' if bad else json.dumps(APIS))
        if stage == "flowgraph":
            return Reply(content=BAD_FLOWGRAPH if bad else flowgraph_for(body))
        if stage == "conversation_graph":
            return Reply(content="[N0](assistant){Hi}\n[E0](N0, N1){}\n[N1](api){find_loan}" if bad
                         else conversation_graph_for(body))
        if stage in ("conversations", "procedure_conversations"):
            return Reply(content='{"messages": [{"role": "assistant", "content": "Hi"}]}' if bad
                         else conversation_for(body))
        return Reply.client_error(404, f"stage {stage} not scripted")


# The job most tests run, and the funnel it must give (see test_jobs.py for the arithmetic).
JOB_CONFIG = {"intents": 3, "procedures_per_intent": 2, "paths": 2, "conversations": "llm", "seed": 1}
BAD = {
    "procedures": ["Name: renewal problem 1\n\nWrite procedure variant 2"],
    "apis": ["[renewal problem 2 v1]"],
    "flowgraph": ["[renewal problem 0 v2]"],
    "conversations": ["about renewal problem 0 v1"],
}
EXPECTED = {
    "intents": (3, 3), "procedures": (6, 5), "apis": (5, 4), "flowgraph": (4, 3),
    "conversation_graph": (3, 3), "paths": (6, 6), "conversations": (6, 4),
}
EXPECTED_REASONS = {
    "procedures": {"procedure_too_short": 1}, "apis": {"wrong_shape": 1}, "flowgraph": {"FG-END-OUT": 1},
    "conversations": {"CV-FIRST-USER": 2},
}


def import_document(count: int = 1) -> dict:
    """An import file: `count` procedures with their APIs and a valid flowgraph each."""
    return {"procedures": [
        {"intent": {"client": "city library", "issue": "cannot renew a loan", "name": f"renewal {i}"},
         "title": f"Renew a loan {i}", "text": PROCEDURE, "apis": APIS,
         "flowgraph": FLOWGRAPH.replace("{Greet the member}", "{Greet the member, desk " + str(i) + "}")}
        for i in range(count)
    ]}

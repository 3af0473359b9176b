"""Conversations from conversation-graph paths: offline realisation and the LLM prompt (A.6).

Offline realisation (no LLM) turns a path into messages:

* the path's first assistant node (the greeting) is skipped because a conversation opens with the
  customer explaining the problem (A.6);
* user and assistant text come from node descriptions;
* before the agent calls an API, the user message that precedes the call states every parameter
  value the call needs and nobody has said yet; values are synthesised from the parameter name and
  type, seeded, and reused for the whole conversation, so each value is grounded;
* api messages are ``name(param=value, ...)`` calls and api_output messages are JSON
  ``{output_name: value}`` of the declared output type, whose value agrees with the outcome label
  of the edge the path takes (a "not found" edge yields false / an empty list / no result).
"""
from __future__ import annotations

import json
import random
import re
from typing import Any

import networkx as nx

from .apis import ApiSpec, ParamSpec, api_to_dict
from .extract import format_api_call
from .formats import write_graph_text
from .speech import assistant_says, user_says
from .typecheck import parse_type
from .outcome import is_negative_outcome  # noqa: F401 (re-exported)
from .values import ValueMaker, output_object

SYNTHETIC_USER_TURN = "The customer gives the details needed"

def _human(name: str) -> str:
    """order_id -> "order ID", DateOfBirth -> "date of birth"."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").strip().lower()
    return re.sub(r"\bid\b", "ID", spaced)


def _say(name: str, value: Any) -> str:
    if isinstance(value, bool) or str(value).lower() in ("yes", "no", "true", "false"):
        yes = value is True or str(value).lower() in ("yes", "true")
        return f"{'Yes' if yes else 'No'} to the {_human(name)}" + (f" ({value})." if isinstance(value, str) else ".")
    if isinstance(value, list):
        value = ", ".join(json.dumps(v) if isinstance(v, dict) else str(v) for v in value)
    elif isinstance(value, dict):
        value = json.dumps(value)
    if isinstance(value, str) and len(value.split()) >= 3:  # free text: said as written
        text = _human(name)
        return f"{text[0].upper()}{text[1:]}: {value}" + ("" if value[-1] in ".?!" else ".")
    plural = name.lower().endswith("s") and not name.lower().endswith(("ss", "us", "is"))
    return f"The {_human(name)} {'are' if plural else 'is'} {value}."


def _output_value(api: ApiSpec, label: str, known: dict[str, Any], rng: random.Random | ValueMaker) -> Any:
    maker = rng if isinstance(rng, ValueMaker) else ValueMaker(rng.randint(0, 2**31))
    negative = is_negative_outcome(label)
    try:
        head, args = parse_type(api.output_type)
    except ValueError:
        head, args = "dict", []
    if head == "union":
        if negative and any(a[0] == "none" for a in args):
            return None
        non_none = [a for a in args if a[0] != "none"]
        head, args = non_none[0] if non_none else ("none", [])
    if head == "none":
        return None
    if head == "bool":
        return not negative
    if head in ("int", "float"):
        return 0 if negative else maker.rng.randint(1, 500)
    if head == "str":
        return label or ("failure" if negative else "success")
    if head in ("list", "set", "tuple", "sequence"):
        if negative:
            return []
        inner = args[0] if args else ("str", [])
        if inner[0] in ("dict", "mapping") or inner[0] not in ("str", "int", "float", "bool"):
            return [{"status": label or "ok"}]
        return [maker.value(ParamSpec(api.output_name, inner[0]), fresh=True)]
    # dict or a domain object: report the outcome and echo the identifiers the call used.
    value_type = args[1][0] if head == "dict" and len(args) == 2 else None
    if value_type is not None and value_type not in ("str", "any"):
        return {}
    value: dict[str, Any] = {"status": label or ("failure" if negative else "success")}
    if not negative:
        for p in api.params:
            if p.name in known and isinstance(known[p.name], (str, int, float)):
                # A dict[str, str] output holds only strings, even when the id was an int.
                value[p.name] = str(known[p.name]) if value_type == "str" else known[p.name]
    return value


def realise_conversation(g: nx.DiGraph, path: list[Any], apis: list[ApiSpec],
                         seed: int = 0) -> list[dict[str, str]]:
    """Offline conversation for one conversation-graph path (see the module docstring)."""
    if g.graph.get("kind") not in (None, "conversation"):
        raise ValueError("realise_conversation needs a conversation graph; convert the flowgraph first")
    if not path:
        raise ValueError("empty path")
    maker = ValueMaker(seed)
    by_name = {a.name: a for a in apis}
    tool_names = list(by_name)
    known: dict[str, Any] = {}
    types = [g.nodes[n]["type"] for n in path]
    messages: list[dict[str, str]] = []
    start = 1 if types[0] == "assistant" else 0

    failed: set[str] = set()  # APIs whose last call took a failure branch

    def needed_after(i: int) -> list[tuple[ParamSpec, bool]]:
        """Parameters of the API calls between path position i and the next user turn, with
        whether the user should give fresh values (a retry after a failed call)."""
        out = []
        for j in range(i + 1, len(path)):
            if types[j] == "user":
                break
            if types[j] == "api":
                api = by_name.get(str(g.nodes[path[j]]["label"]).strip())
                if api:
                    out += [(p, api.name in failed) for p in api.params]
        return out

    if start == 1 and (len(path) == 1 or types[1] != "user"):
        # A path that does not continue with the user still needs the customer to speak first.
        messages.append({"role": "user", "content": "Hi, I need some help, please."})
    for i in range(start, len(path)):
        node, ntype = path[i], types[i]
        label = str(g.nodes[node].get("label", "")).strip()
        if ntype == "user":
            values = []
            said: set[str] = set()
            for p, retry in needed_after(i):
                if p.name in said:
                    continue
                if p.name not in known or retry:
                    said.add(p.name)
                    known[p.name] = maker.value(p, fresh=retry)
                    values.append(_say(p.name, known[p.name]))
            synthetic = label.strip().rstrip(".").lower() == SYNTHETIC_USER_TURN.lower()
            opening = "Hi, I need some help, please." if not messages and not label.strip() else user_says(label)
            parts = ([] if synthetic and values else [opening if not synthetic else "Here are my details."])
            messages.append({"role": "user", "content": " ".join(parts + values)})
        elif ntype == "assistant":
            last = None
            if messages and messages[-1]["role"] == "api_output":
                try:
                    last = json.loads(messages[-1]["content"])
                except ValueError:
                    last = None
                if isinstance(last, dict) and len(last) == 1 and isinstance(next(iter(last.values())), dict):
                    last = next(iter(last.values()))
            messages.append({"role": "assistant", "content": assistant_says(label, tool_names, last, known)})
        elif ntype == "api":
            api = by_name.get(label)
            params = {p.name: known[p.name] for p in api.params if p.name in known} if api else {}
            messages.append({"role": "api", "content": format_api_call(label, params)})
            outcome = ""
            if i + 1 < len(path):
                outcome = str(g.edges[node, path[i + 1]].get("label", ""))
            if is_negative_outcome(outcome):
                failed.add(label)
            else:
                failed.discard(label)
            if api is not None and api.outputs:
                obj = output_object(api.outputs, is_negative_outcome(outcome), outcome, known, maker)
                messages.append({"role": "api_output", "content": json.dumps(obj)})
                continue
            if api is None:
                value: Any = {"status": outcome or "success"}
                name = "result"
            else:
                value = _output_value(api, outcome, known, maker)
                name = api.output_name
            messages.append({"role": "api_output", "content": json.dumps({name: value})})
    if messages and messages[-1]["role"] != "assistant":
        messages.append({"role": "assistant", "content": "Is there anything else I can help with?"})
    return messages


CONVERSATION_SYSTEM_PROMPT = """\
You write realistic customer-support conversations between a user and an AI assistant that can \
call APIs. You are given a conversation graph, the APIs, and one path through the graph.

The graph format: [Ni](type){description} is a node; type is assistant, user or api. \
[Ei](Ni, Nj){} means Ni happens right before Nj. [Ei](Ni, Nj){outcome} only follows an api node \
and says what the API returned on that branch.

Write the conversation that follows the path exactly, as a JSON list of messages with "role" and \
"content". Rules:
- The first message is the user's, explaining the problem, even if the path starts with a greeting.
- After a user message comes an assistant or an api message.
- After an assistant message comes a user message.
- After an api message comes an api_output message; after an api_output, the assistant reacts \
to it (or the next api call on the path is made).
- An api message is a call such as lookup_booking(booking_id=4471) using only the given APIs, \
with every required parameter, and every value must have been said by the user or returned by an \
earlier api_output.
- An api_output is JSON of the API's declared output type and agrees with the branch taken.
- Use realistic names, numbers and places, never placeholders such as Example1 or ProductX.
Reply with the JSON list only."""


def build_conversation_prompt(g: nx.DiGraph, path: list[Any], apis: list[ApiSpec]) -> list[dict[str, str]]:
    """Chat messages for the LLM conversation generator (paper A.6, in this project's words)."""
    user = (
        f"{write_graph_text(g)}"
        f"<apis>{json.dumps([api_to_dict(a) for a in apis], ensure_ascii=False)}</apis>\n"
        f"path: [{', '.join(str(n) for n in path)}]"
    )
    return [
        {"role": "system", "content": CONVERSATION_SYSTEM_PROMPT},
        {"role": "user", "content": user},
    ]

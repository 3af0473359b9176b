"""Validators for flowgraphs, conversation graphs and conversations (design.md's rules).

Every rule has a stable id listed in :data:`RULES`; curation uses the ids as reason codes, so ids
are never renamed, only added. A violation names the node (``N3``) or edge (``E4(N2, N4)``) or
message (``message 5``) concerned.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable

import networkx as nx

from .apis import ApiSpec
from .extract import ApiCallParseError, parse_api_call
from .formats import CONVERSATION_TYPES, FLOWGRAPH_TYPES
from .typecheck import matches

RULES: dict[str, str] = {
    # Flowgraphs (paper §3.4, prompt A.4)
    "FG-EMPTY": "The flowgraph has no nodes.",
    "FG-NODE-TYPE": "Node types are start_message, message, api or end_message.",
    "FG-NODE-ID": "Node ids have the form N<integer>.",
    "FG-EDGE-ID": "Edge ids have the form E<integer>.",
    "FG-EMPTY-LABEL": "Every node has a description (a message, or the API name for api nodes).",
    "FG-ROOT": "There is exactly one start_message node, and it has no parent.",
    "FG-BACK-TO-ROOT": "No edge points back to the start_message node.",
    "FG-API-OUT-LABEL": "Edges leaving an api node carry the API outcome as their description.",
    "FG-END-OUT": "end_message nodes have no outgoing edges.",
    "FG-LEAF-END": "Every leaf (node without outgoing edges) is an end_message node.",
    "FG-UNREACHABLE": "Every node is reachable from the start_message node.",
    "FG-DEAD-END": "Cycles are allowed, but from every node some leaf must be reachable.",
    "FG-UNKNOWN-API": "api nodes name an API from the API list.",
    # Conversation graphs (paper §3.5, prompt A.5)
    "CG-EMPTY": "The conversation graph has no nodes.",
    "CG-NODE-TYPE": "Node types are assistant, user or api.",
    "CG-NODE-ID": "Node ids have the form N<integer>.",
    "CG-EDGE-ID": "Edge ids have the form E<integer>.",
    "CG-EMPTY-LABEL": "Every node has a description.",
    "CG-ROOT": "There is exactly one node without a parent, and it is an assistant node.",
    "CG-ASSISTANT-USER": "assistant nodes are followed only by user nodes.",
    "CG-USER-NEXT": "user nodes are followed only by assistant or api nodes.",
    "CG-API-NEXT": "api nodes are followed only by api or assistant nodes.",
    "CG-API-OUT-LABEL": "Edges leaving an api node carry the API outcome as their description.",
    "CG-LABEL-NON-API": "Only edges leaving api nodes have descriptions.",
    "CG-LEAF-ASSISTANT": "Every leaf is an assistant node.",
    "CG-UNREACHABLE": "Every node is reachable from the root.",
    "CG-DEAD-END": "Cycles are allowed, but from every node some leaf must be reachable.",
    "CG-UNKNOWN-API": "api nodes name an API from the API list.",
    # Conversations (paper §3.8, prompt A.6)
    "CV-EMPTY": "The conversation has no messages.",
    "CV-ROLE": "Roles are user, assistant, api or api_output.",
    "CV-EMPTY-CONTENT": "Every message has content.",
    "CV-FIRST-USER": "The first message is the user's.",
    "CV-ORDER": ("user is followed by assistant or api; assistant by user; api by api_output; "
                 "api_output by assistant or api."),
    "CV-LAST-ASSISTANT": "The conversation ends with an assistant message.",
    "CV-API-SYNTAX": "An api message is a call such as get_order(order_id=812).",
    "CV-UNKNOWN-API": "Every api call names a known API.",
    "CV-MISSING-PARAM": "Every api call passes all required parameters.",
    "CV-UNKNOWN-PARAM": "Every api call passes only parameters the API declares.",
    "CV-UNGROUNDED-VALUE": ("Every parameter value was said earlier by the user or returned by an "
                            "earlier API output."),
    "CV-OUTPUT-JSON": "An api_output message is JSON.",
    "CV-OUTPUT-TYPE": "An api_output matches the API's declared output type.",
}

_NODE_ID = re.compile(r"^N\d+$")
_EDGE_ID = re.compile(r"^E\d+$")


@dataclass
class Violation:
    rule: str
    where: str
    message: str
    severity: str = "error"

    def __str__(self) -> str:
        return f"{self.rule} {self.where}: {self.message}"


def _edge_where(g: nx.DiGraph, u: Any, v: Any) -> str:
    return f"{g.edges[u, v].get('id') or 'edge'}({u}, {v})"


def _can_reach_leaf(g: nx.DiGraph) -> set:
    leaves = [n for n in g if g.out_degree(n) == 0]
    seen = set(leaves)
    stack = list(leaves)
    while stack:
        n = stack.pop()
        for p in g.predecessors(n):
            if p not in seen:
                seen.add(p)
                stack.append(p)
    return seen


def _structure(g: nx.DiGraph, prefix: str, root: Any | None) -> list[Violation]:
    """Reachability and dead ends, shared by both graph kinds."""
    out: list[Violation] = []
    if root is not None:
        reachable = nx.descendants(g, root) | {root}
        for n in g:
            if n not in reachable:
                out.append(Violation(f"{prefix}-UNREACHABLE", str(n), "not reachable from the root "
                                     f"{root}"))
    reach_leaf = _can_reach_leaf(g)
    for n in g:
        if n not in reach_leaf:
            out.append(Violation(f"{prefix}-DEAD-END", str(n),
                                 "no leaf is reachable from here (a cycle with no way out)"))
    return out


def _ids(g: nx.DiGraph, prefix: str) -> list[Violation]:
    out = []
    for n in g:
        if not _NODE_ID.match(str(n)):
            out.append(Violation(f"{prefix}-NODE-ID", str(n), "node id must look like N<integer>"))
    for u, v, d in g.edges(data=True):
        if d.get("id") and not _EDGE_ID.match(str(d["id"])):
            out.append(Violation(f"{prefix}-EDGE-ID", _edge_where(g, u, v),
                                 "edge id must look like E<integer>"))
    return out


def validate_flowgraph(g: nx.DiGraph, api_names: Iterable[str] | None = None) -> list[Violation]:
    if len(g) == 0:
        return [Violation("FG-EMPTY", "graph", "the flowgraph has no nodes")]
    out = _ids(g, "FG")
    types = nx.get_node_attributes(g, "type")
    for n in g:
        t = types.get(n)
        if t not in FLOWGRAPH_TYPES:
            out.append(Violation("FG-NODE-TYPE", str(n), f"unknown node type {t!r}; expected one "
                                 "of " + ", ".join(FLOWGRAPH_TYPES)))
        if not str(g.nodes[n].get("label", "")).strip():
            out.append(Violation("FG-EMPTY-LABEL", str(n), "node has no description"))
    starts = [n for n in g if types.get(n) == "start_message"]
    root = None
    if len(starts) != 1:
        out.append(Violation("FG-ROOT", "graph", f"expected exactly one start_message node, found "
                             f"{len(starts)}" + (f" ({', '.join(map(str, starts))})" if starts else "")))
    else:
        root = starts[0]
        for p in g.predecessors(root):
            out.append(Violation("FG-BACK-TO-ROOT", _edge_where(g, p, root),
                                 "edge points back to the start_message node"))
    parentless = [n for n in g if g.in_degree(n) == 0 and n != root]
    for n in parentless:
        out.append(Violation("FG-ROOT", str(n), "node other than the start_message has no parent"))
    for u, v, d in g.edges(data=True):
        if types.get(u) == "api" and not str(d.get("label", "")).strip():
            out.append(Violation("FG-API-OUT-LABEL", _edge_where(g, u, v),
                                 f"edge leaving api node {u} has no API outcome description"))
    for n in g:
        if types.get(n) == "end_message" and g.out_degree(n) > 0:
            out.append(Violation("FG-END-OUT", str(n), "end_message node has outgoing edges"))
        if g.out_degree(n) == 0 and types.get(n) != "end_message":
            out.append(Violation("FG-LEAF-END", str(n), f"leaf node of type {types.get(n)!r} "
                                 "must be an end_message"))
    if api_names is not None:
        known = set(api_names)
        for n in g:
            label = str(g.nodes[n].get("label", "")).strip()
            if types.get(n) == "api" and label not in known:
                out.append(Violation("FG-UNKNOWN-API", str(n), f"API {label!r} is not in the API list"))
    out += _structure(g, "FG", root)
    return out


def validate_conversation_graph(g: nx.DiGraph, api_names: Iterable[str] | None = None) -> list[Violation]:
    if len(g) == 0:
        return [Violation("CG-EMPTY", "graph", "the conversation graph has no nodes")]
    out = _ids(g, "CG")
    types = nx.get_node_attributes(g, "type")
    for n in g:
        if types.get(n) not in CONVERSATION_TYPES:
            out.append(Violation("CG-NODE-TYPE", str(n), f"unknown node type {types.get(n)!r}; "
                                 "expected one of " + ", ".join(CONVERSATION_TYPES)))
        if not str(g.nodes[n].get("label", "")).strip():
            out.append(Violation("CG-EMPTY-LABEL", str(n), "node has no description"))
    roots = [n for n in g if g.in_degree(n) == 0]
    root = None
    if len(roots) != 1:
        out.append(Violation("CG-ROOT", "graph", f"expected exactly one node without a parent, found "
                             f"{len(roots)}" + (f" ({', '.join(map(str, roots))})" if roots else "")))
    if roots:
        root = roots[0]
        if types.get(root) != "assistant":
            out.append(Violation("CG-ROOT", str(root), f"the root is a {types.get(root)!r} node, "
                                 "not an assistant node"))
    allowed = {"assistant": ("user",), "user": ("assistant", "api"), "api": ("api", "assistant")}
    rule_for = {"assistant": "CG-ASSISTANT-USER", "user": "CG-USER-NEXT", "api": "CG-API-NEXT"}
    for u, v, d in g.edges(data=True):
        tu, tv = types.get(u), types.get(v)
        if tu in allowed and tv not in allowed[tu]:
            out.append(Violation(rule_for[tu], _edge_where(g, u, v),
                                 f"{tu} node is followed by a {tv} node"))
        labelled = bool(str(d.get("label", "")).strip())
        if tu == "api" and not labelled:
            out.append(Violation("CG-API-OUT-LABEL", _edge_where(g, u, v),
                                 f"edge leaving api node {u} has no API outcome description"))
        if tu != "api" and labelled:
            out.append(Violation("CG-LABEL-NON-API", _edge_where(g, u, v),
                                 f"edge leaving a {tu} node has a description"))
    for n in g:
        if g.out_degree(n) == 0 and types.get(n) != "assistant":
            out.append(Violation("CG-LEAF-ASSISTANT", str(n),
                                 f"leaf node of type {types.get(n)!r} must be an assistant node"))
    if api_names is not None:
        known = set(api_names)
        for n in g:
            label = str(g.nodes[n].get("label", "")).strip()
            if types.get(n) == "api" and label not in known:
                out.append(Violation("CG-UNKNOWN-API", str(n), f"API {label!r} is not in the API list"))
    out += _structure(g, "CG", root if len(roots) == 1 else None)
    return out


_NEXT_ROLES = {
    "user": ("assistant", "api"),
    "assistant": ("user",),
    "api": ("api_output",),
    # The A.6 prompt says api_output -> assistant, but conversation graphs allow api -> api
    # (paper A.5), so a path may legitimately chain two calls.
    "api_output": ("assistant", "api"),
}


def _scalars(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _scalars(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _scalars(v)
    else:
        yield value


def _grounded(value: Any, evidence: str) -> bool:
    """Was this scalar said before? Booleans and None are exempt: users say "yes", not "True"."""
    if value is None or isinstance(value, bool):
        return True
    text = str(value).strip().lower()
    if not text:
        return True
    if text in evidence:
        return True
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) in evidence
    return False


def validate_conversation(messages: list[dict[str, Any]], apis: list[ApiSpec]) -> list[Violation]:
    if not messages:
        return [Violation("CV-EMPTY", "conversation", "the conversation has no messages")]
    out: list[Violation] = []
    by_name = {a.name: a for a in apis}
    roles = [m.get("role") for m in messages]
    for i, m in enumerate(messages):
        if m.get("role") not in _NEXT_ROLES:
            out.append(Violation("CV-ROLE", f"message {i}", f"unknown role {m.get('role')!r}"))
        if not str(m.get("content", "")).strip():
            out.append(Violation("CV-EMPTY-CONTENT", f"message {i}", "message has no content"))
    if roles[0] != "user":
        out.append(Violation("CV-FIRST-USER", "message 0", f"conversation starts with {roles[0]!r}, "
                             "not with the user"))
    for i in range(len(roles) - 1):
        a, b = roles[i], roles[i + 1]
        if a in _NEXT_ROLES and b not in _NEXT_ROLES[a]:
            out.append(Violation("CV-ORDER", f"message {i + 1}", f"{b!r} follows {a!r}; expected "
                                 + " or ".join(_NEXT_ROLES[a])))
    if roles[-1] != "assistant":
        out.append(Violation("CV-LAST-ASSISTANT", f"message {len(roles) - 1}",
                             f"conversation ends with {roles[-1]!r}"))
    evidence = ""  # lower-cased user text and api outputs seen so far
    last_api: ApiSpec | None = None
    for i, m in enumerate(messages):
        role, content = m.get("role"), str(m.get("content", ""))
        where = f"message {i}"
        if role == "user":
            evidence += "\n" + content.lower()
        elif role == "api":
            last_api = None
            try:
                name, params = parse_api_call(content)
            except ApiCallParseError as exc:
                out.append(Violation("CV-API-SYNTAX", where, str(exc)))
                continue
            api = by_name.get(name)
            if api is None:
                out.append(Violation("CV-UNKNOWN-API", where, f"API {name!r} is not in the API list"))
                continue
            last_api = api
            declared = {p.name for p in api.params}
            for p in api.params:
                if p.required and p.name not in params:
                    out.append(Violation("CV-MISSING-PARAM", where,
                                         f"{name} is called without required parameter {p.name!r}"))
            for pname, value in params.items():
                if pname not in declared:
                    out.append(Violation("CV-UNKNOWN-PARAM", where,
                                         f"{name} has no parameter {pname!r}"))
                    continue
                for scalar in _scalars(value):
                    if not _grounded(scalar, evidence):
                        out.append(Violation("CV-UNGROUNDED-VALUE", where,
                                             f"{name}: value {scalar!r} for {pname!r} was not said "
                                             "by the user or returned by an earlier API"))
        elif role == "api_output":
            evidence += "\n" + content.lower()
            try:
                value = json.loads(content)
            except (json.JSONDecodeError, TypeError):
                out.append(Violation("CV-OUTPUT-JSON", where, "api_output is not valid JSON"))
                continue
            if last_api is not None and not output_matches(value, last_api):
                out.append(Violation("CV-OUTPUT-TYPE", where, f"output of {last_api.name} does not "
                                     f"match its declared type {last_api.output_type!r}"))
    return out


def output_matches(value: Any, api: ApiSpec) -> bool:
    """An output is either ``{output_name: value}`` (the A.6 example) or the bare value; an API with
    declared output fields returns an object of those fields (each of its declared type)."""
    if api.outputs and isinstance(value, dict) and set(value) <= {p.name for p in api.outputs}:
        return all(matches(value[p.name], p.type) for p in api.outputs if p.name in value)
    if isinstance(value, dict) and set(value) == {api.output_name}:
        if matches(value[api.output_name], api.output_type):
            return True
    return matches(value, api.output_type)


def errors(violations: list[Violation]) -> list[Violation]:
    return [v for v in violations if v.severity == "error"]

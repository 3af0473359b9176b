"""Multi-API generation (ToolDial's sampling of API pairs): a job can seed its procedures from
connected API pairs or chains of the API compatibility graph, so that conversations which pass one
call's output into the next call are generated on purpose.

Job setting ``api_chains``: ``{"apis": [<API list in any shape api_graph reads>] (default: every
API in the database), "length": 2, "count": 10, "min_score": 0.7}``. At job creation the graph is
built (word-overlap similarity: deterministic and cheap in a request) and the chains are frozen
into the job's config (`chains`: each with its APIs in the paper's A.3 shape and its links). The
procedure of work item `index` gets chain ``index % len(chains)``: the A.2 prompt is told to
write a procedure that calls them in order, passing outputs on; the procedure row keeps the chain
(`Procedure.api_chain`) and the A.3 prompt is given those exact APIs."""
from __future__ import annotations

import json
from typing import Any

from generation.pipeline import api_graph as G

MAX_CHAINS = 200


def _api_dict(node: G.ApiNode) -> dict[str, Any]:
    if len(node.outputs) == 1:
        output: dict[str, Any] = {"name": node.outputs[0].name, "type": node.outputs[0].type or "any"}
    else:
        output = {"name": "result", "type": "dict", "fields": [o.name for o in node.outputs]}
    return {"name": node.name, "desc": node.description,
            "params": [{"name": f.name, "type": f.type or "str", "required": True, "description": f.description}
                       for f in node.inputs],
            "output": output}


def chains_from_apis(apis: list[G.ApiNode], *, length: int = 2, count: int = 10,
                     min_score: float = G.DEFAULT_MIN_SCORE, embed=None) -> list[dict[str, Any]]:
    """Up to `count` chains of `length` APIs along the graph's edges, best first."""
    edges = G.build_graph(apis, min_score=min_score, embed=embed)
    by_pair = {(e.source, e.target): e for e in edges}
    nodes = {a.name: a for a in apis}
    out = []
    for names in G.chains(edges, length=length, limit=count):
        links = [{"from": a, "to": b, "fields": [[m.output, m.input] for m in by_pair[(a, b)].matches[:3]]}
                 for a, b in zip(names, names[1:])]
        out.append({"apis": [_api_dict(nodes[n]) for n in names], "links": links})
    return out


def config_normalise(cfg: dict[str, Any]) -> dict[str, Any]:
    """Check the ``api_chains`` setting and freeze its chains into the config (JobConfigError)."""
    from generation.services import JobConfigError  # noqa: PLC0415 - services imports this module

    spec = cfg.get("api_chains")
    if not spec:
        return cfg
    if not isinstance(spec, dict):
        raise JobConfigError("api_chains must be an object: {\"apis\": [...], \"length\": 2, \"count\": 10}")
    if spec.get("chains"):  # already frozen (a job re-read)
        return cfg
    try:
        length, count = int(spec.get("length", 2)), int(spec.get("count", 10))
        min_score = float(spec.get("min_score", G.DEFAULT_MIN_SCORE))
    except (TypeError, ValueError) as exc:
        raise JobConfigError(f"api_chains: bad number: {exc}") from None
    if not 2 <= length <= 4 or not 1 <= count <= MAX_CHAINS or not 0.0 <= min_score <= 1.0:
        raise JobConfigError(f"api_chains: length 2-4, count 1-{MAX_CHAINS}, min_score 0-1")
    try:
        if spec.get("apis") is not None:
            apis = G.load_apis(spec["apis"])
        else:
            from generation.api_graphs import nodes_from_db  # noqa: PLC0415

            apis = nodes_from_db()
    except G.ApiGraphInputError as exc:
        raise JobConfigError(f"api_chains.apis: {exc}") from None
    chains = chains_from_apis(apis, length=length, count=count, min_score=min_score)
    if not chains:
        raise JobConfigError(f"api_chains: no chain of {length} connected APIs among {len(apis)} APIs "
                             f"at min score {min_score}")
    return {**cfg, "api_chains": {"length": length, "count": count, "min_score": min_score, "chains": chains}}


def chain_for(cfg: dict[str, Any], index: int) -> dict[str, Any] | None:
    chains = ((cfg or {}).get("api_chains") or {}).get("chains") or []
    return chains[index % len(chains)] if chains else None


def _links_text(chain: dict[str, Any]) -> str:
    lines = []
    for i, api in enumerate(chain["apis"], 1):
        lines.append(f"{i}. {api['name']}: {api.get('desc') or ''}".rstrip(": "))
    for link in chain["links"]:
        fields = ", ".join(f"its output {o} gives the input {i}" for o, i in link["fields"])
        lines.append(f"- {link['from']} comes before {link['to']}: {fields}.")
    return "\n".join(lines)


def with_chain_a2(messages: list[dict[str, str]], chain: dict[str, Any] | None) -> list[dict[str, str]]:
    """The A.2 messages, told to build the procedure around the chain."""
    if not chain:
        return messages
    extra = ("\n\nThe procedure must use these APIs, in this order, passing each call's output on to "
             "the next call:\n" + _links_text(chain))
    return messages[:-1] + [{**messages[-1], "content": messages[-1]["content"] + extra}]


def with_chain_a3(messages: list[dict[str, str]], chain: dict[str, Any] | None) -> list[dict[str, str]]:
    """The A.3 messages, given the chain's APIs to reuse exactly."""
    if not chain:
        return messages
    extra = ("\n\nThe procedure was written for these APIs; use them exactly (names, parameters, outputs) "
             "and add others only if the procedure needs them:\n<apis>"
             + json.dumps(chain["apis"], ensure_ascii=False) + "</apis>\nThe chain:\n" + _links_text(chain))
    return messages[:-1] + [{**messages[-1], "content": messages[-1]["content"] + extra}]

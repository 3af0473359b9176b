"""The API compatibility graph (ToolDial §3.1, DIGEST A.2.1). Pure: no Django.

A directed edge A → B exists for each output field of A that can fill an input parameter of B.
Output fields are only those A's output **declares** (generation/pipeline/output_schema.py: a JSON
Schema, flattened with list → item and map fields; STAR's output list; the paper's output name);
an API that declares no output feeds nothing, and no field name is made up from an API's name.
ToolDial links entities when description similarity, keyword+description similarity and the
longest-common-subsequence similarity of the names all pass thresholds. Our fields have no
GPT-augmented descriptions or keywords, so a pair (output o of A, input i of B) is scored from:

* **names**: the same words; one name's words inside the other's; the input's description naming
  the output's (multi-word) name as a phrase (``iata_code`` for "The IATA code for the origin
  city"); else LCS similarity of the normalised names. Generic names (``id``, ``name``, ``message``)
  only count when the two APIs share a domain word (``ride_status`` → ``ride_change``, not
  ``restaurant`` → ``hotel``);
* **types**: incompatible coarse types (a number for a boolean) rule the pair out;
* **descriptions**: similarity of the field descriptions (word overlap, or the cosine of MiniLM
  sentence embeddings when an ``embed`` function is given; the ML extra provides one).

score = 0.75 · name score + 0.25 · description similarity; an edge when score ≥ `min_score` (0.7),
unless B accepts A's record in none of the states A's output can be in (``accepts``, e.g. a
cancelled order feeds no tool that needs a pending one). Each edge keeps its score and the matched
fields (output paths such as ``flights[].flight_number``). Loaders read the shapes of tau-bench / tau2-bench
tools, STAR api files and the project's own API lists (``{"name", "params", "output"}``).
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from generation.pipeline import output_schema as OS

Embed = Callable[[list[str]], list[list[float]]]
DEFAULT_MIN_SCORE = 0.7
GENERIC = {"id", "name", "message", "status", "result", "type", "value", "data", "details", "info", "time", "day",
           "price", "request", "requesttype", "date", "summary", "amount", "reason"}
STOP = {"the", "a", "an", "of", "to", "for", "and", "or", "by", "in", "on", "is", "if", "be", "with", "get", "find",
        "list", "all", "search", "book", "update", "modify", "cancel", "details", "api", "user's", "this"}


@dataclass
class Field:
    name: str
    type: str = ""
    description: str = ""
    path: str = ""  # where the value sits: "flights[].flight_number" (default: the name)
    via: str = "field"  # "field", "list item" or "map key"

    @property
    def where(self) -> str:
        return self.path or self.name


@dataclass
class ApiNode:
    name: str
    description: str = ""
    inputs: list[Field] = field(default_factory=list)
    outputs: list[Field] = field(default_factory=list)
    states: set[str] | None = None  # the states its returned record can be in (None: any)
    accepts: dict[str, Any] = field(default_factory=dict)  # input -> {"status": [...]} / {"status_not": [...]}


@dataclass
class Match:
    output: str
    input: str
    score: float
    how: str  # "name", "described" or "description"
    via: str = "field"  # "list item": the value is in a record of a list or map the output returns


@dataclass
class Edge:
    source: str
    target: str
    score: float
    matches: list[Match]

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "score": round(self.score, 4),
                "fields": [{"output": m.output, "input": m.input, "score": round(m.score, 4), "how": m.how,
                            "via": m.via} for m in self.matches]}


# --------------------------------------------------------------------------- text helpers


def words(text: str) -> list[str]:
    """camelCase, snake_case and spaces split into lower-case words; a plural 's' dropped."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", str(text or ""))
    out = []
    for w in re.split(r"[^A-Za-z0-9]+", text):
        w = w.lower()
        if w == "ids" or (len(w) > 3 and w.endswith("s") and not w.endswith("ss")):
            w = w[:-1]
        if w:
            out.append(w)
    return out


def compact(text: str) -> str:
    return "".join(words(text))


def lcs_similarity(a: str, b: str) -> float:
    """2·|LCS| / (|a| + |b|) on the compact names (ToolDial's name criterion)."""
    a, b = compact(a), compact(b)
    if not a or not b:
        return 0.0
    prev = [0] * (len(b) + 1)
    for ca in a:
        cur = [0]
        for j, cb in enumerate(b):
            cur.append(prev[j] + 1 if ca == cb else max(prev[j + 1], cur[j]))
        prev = cur
    return 2 * prev[-1] / (len(a) + len(b))


def overlap(a: str, b: str) -> float:
    """Dice overlap of content words: the description similarity without the ML extra."""
    wa = {w for w in words(a) if w not in STOP}
    wb = {w for w in words(b) if w not in STOP}
    return 2 * len(wa & wb) / (len(wa) + len(wb)) if wa and wb else 0.0


def coarse_type(t: str) -> str:
    t = str(t or "").strip().lower()
    if not t:
        return ""
    if re.match(r"(list|array|set|tuple|sequence)", t) or t.endswith(("list", "multiple")):
        return "list"
    if t in ("int", "integer", "float", "number", "double", "decimal"):
        return "number"
    if t in ("bool", "boolean"):
        return "bool"
    if t in ("str", "string", "shortstring", "longstring", "categorical", "requesttype", "text"):
        return "string"
    return "object"


def types_compatible(out_type: str, in_type: str) -> bool:
    """Whether a value of the output's type can fill the input: the same or an unknown type; ids
    travel as numbers or strings; anything fills an element of a list input or an untyped object
    input; a record or a list fills no scalar input (its declared fields do, see output_schema)."""
    a, b = coarse_type(out_type), coarse_type(in_type)
    if not a or not b or a == b:
        return True
    if {a, b} == {"number", "string"}:
        return True
    if b in ("list", "object"):
        return True
    return False


def _domain_words(api: ApiNode) -> set[str]:
    return {w for w in words(api.name) if w not in STOP and w not in GENERIC}


# --------------------------------------------------------------------------- scoring


def name_similarity(out_name: str, in_name: str) -> float:
    """1 for the same words; 0.8 when one name's words are all in the other (Location ->
    ArrivalLocation); otherwise 0.8 x the LCS similarity (OpenTimeHour vs EndTimeHour share
    letters, not meaning)."""
    a, b = words(out_name), words(in_name)
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    if set(a) <= set(b) or set(b) <= set(a):
        return 0.8
    return 0.8 * lcs_similarity(out_name, in_name)


def described(out_name: str, in_description: str) -> bool:
    """The input's description names the output's multi-word name as a phrase ("IATA code")."""
    a, text = words(out_name), words(in_description)
    return len(a) >= 2 and any(text[i:i + len(a)] == a for i in range(len(text) - len(a) + 1))


def field_score(out: Field, src: ApiNode, inp: Field, dst: ApiNode, *, desc_sim: float) -> tuple[float, str]:
    """(score, how) for filling input `inp` of `dst` with output `out` of `src`."""
    name, how = name_similarity(out.name, inp.name), "name"
    if not types_compatible(out.type, inp.type) and not (name == 1.0 and coarse_type(inp.type) != "bool"):
        # A record fills no scalar input unless it carries the input's very name (the paper's loosely
        # typed {"name": "user_id", "type": "dict"}); "order" (a dict) never fills "order_id".
        return 0.0, ""
    if name < 0.9 and described(out.name, inp.description):
        name, how = 0.9, "described"
    score = 0.75 * name + 0.25 * desc_sim
    if desc_sim > name and desc_sim >= 0.8:
        how = "description"
    generic = compact(out.name) in GENERIC or compact(inp.name) in GENERIC
    if generic and not (compact(out.name) == compact(inp.name) and _domain_words(src) & _domain_words(dst)):
        # A generic name ("id", "name", "message") links two APIs only within one domain.
        score = min(score, 0.5)
    return score, how


def _field_text(f: Field, api: ApiNode) -> str:
    return f"{' '.join(words(f.name))}: {f.description or ''}".strip()


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def build_graph(apis: Iterable[ApiNode], *, min_score: float = DEFAULT_MIN_SCORE,
                embed: Embed | None = None) -> list[Edge]:
    """Every edge A → B (A ≠ B) whose best field match scores ≥ `min_score`, with all the matched
    fields above it; sorted by source, target."""
    apis = list(apis)
    vectors: dict[str, list[float]] = {}
    if embed is not None:
        texts = sorted({_field_text(f, a) for a in apis for f in a.inputs + a.outputs})
        vectors = dict(zip(texts, embed(texts)))
    edges = []
    for src in apis:
        for dst in apis:
            if src.name == dst.name:
                continue
            if not all(OS.accepted(src.states, rule) for param, rule in dst.accepts.items()
                       if any(o.where == param for o in src.outputs)):
                continue  # B needs the record in a state A's output never leaves it in
            matches = []
            for out in src.outputs:
                for inp in dst.inputs:
                    if embed is not None:
                        desc = max(0.0, _cosine(vectors[_field_text(out, src)], vectors[_field_text(inp, dst)]))
                    else:
                        desc = overlap(_field_text(out, src), _field_text(inp, dst))
                    score, how = field_score(out, src, inp, dst, desc_sim=desc)
                    if score >= min_score:
                        matches.append(Match(out.where, inp.where, score, how, out.via))
            if matches:
                matches.sort(key=lambda m: (-m.score, m.output, m.input))
                edges.append(Edge(src.name, dst.name, matches[0].score, matches))
    return sorted(edges, key=lambda e: (e.source, e.target))


def chains(edges: list[Edge], *, length: int = 2, limit: int = 50) -> list[list[str]]:
    """API chains A → B (→ C …) along the graph's edges, best-scored first (ToolDial samples API
    pairs; longer chains follow edges end to end without repeating an API)."""
    out_edges: dict[str, list[Edge]] = {}
    for e in edges:
        out_edges.setdefault(e.source, []).append(e)
    found: list[tuple[float, list[str]]] = []

    def walk(path: list[str], score: float) -> None:
        if len(path) == length:
            found.append((score, path))
            return
        for e in out_edges.get(path[-1], []):
            if e.target not in path:
                walk(path + [e.target], min(score, e.score))

    for source in sorted(out_edges):
        walk([source], 1.0)
    found.sort(key=lambda t: (-t[0], t[1]))
    return [p for _s, p in found[:limit]]


# --------------------------------------------------------------------------- loaders


class ApiGraphInputError(ValueError):
    """The API file could not be read; the message names the item and field."""


def outputs_of_schema(schema: Any) -> list[Field]:
    return [Field(f.name, f.type, f.description, f.path, f.via) for f in OS.schema_fields(schema)]


def _fields(found: list[OS.SchemaField]) -> list[Field]:
    return [Field(f.name, f.type, f.description, "" if f.path == f.name else f.path, f.via) for f in found]


def node_from_dict(item: Any, index: int = 0) -> ApiNode:
    """One API from any of the supported shapes (tau-bench tool, tau2 tool, STAR file, ours)."""
    if not isinstance(item, dict):
        raise ApiGraphInputError(f"item {index}: expected an object, got {type(item).__name__}")
    if item.get("type") == "function" and isinstance(item.get("function"), dict):
        item = item["function"]
    if "function" in item and isinstance(item.get("input"), list):  # STAR
        name = str(item["function"])
        if name == "generic_sample" and item.get("db"):
            name = f"{item['db']}_search"
        fields = lambda rows: [Field(str(r.get("Name")), str(r.get("Type", "")), str(r.get("ReadableName", "")))  # noqa: E731
                               for r in rows if isinstance(r, dict) and r.get("Name")]
        return ApiNode(name, "", fields(item["input"]), fields(item.get("output") or []))
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ApiGraphInputError(f"item {index}: field 'name' is missing")
    desc = str(item.get("description") or item.get("desc") or "")
    inputs: list[Field] = []
    params = item.get("parameters", item.get("params"))
    if isinstance(params, dict):  # JSON schema
        inputs = _fields(OS.input_fields(params))
    elif isinstance(params, list):
        for p in params:
            if isinstance(p, dict) and "name" in p:
                inputs.append(Field(str(p["name"]), str(p.get("type", "")), str(p.get("description") or p.get("desc") or "")))
            elif isinstance(p, dict) and len(p) == 1:
                (pname, ptype), = p.items()
                inputs.append(Field(str(pname), str(ptype)))
    elif params is not None:
        raise ApiGraphInputError(f"item {index} ({name}): field 'parameters' must be an object or a list")
    outputs: list[Field] = []
    output = item.get("output")
    if isinstance(output, dict) and output.get("name"):
        outputs = [Field(str(output["name"]), str(output.get("type", "")), str(output.get("description", "")))]
    elif isinstance(output, list):
        outputs = [Field(str(o.get("name") or o.get("Name")), str(o.get("type") or o.get("Type") or ""))
                   for o in output if isinstance(o, dict) and (o.get("name") or o.get("Name"))]
    schema = OS.declared_schema(item)
    if schema is not None and not outputs:
        outputs = outputs_of_schema(schema)
    # A type name alone (tau2's {"python_type": "User"}) or no output at all (tau-bench) declares no
    # field: such an API feeds nothing until an output schema is imported (apply_output_schemas).
    accepts = item.get("accepts") if isinstance(item.get("accepts"), dict) else {}
    return ApiNode(name.strip(), desc, inputs, outputs, OS.record_states(schema), dict(accepts))


def apply_output_schemas(apis: list[ApiNode], schemas: Any) -> list[ApiNode]:
    """Imported output schemas: ``{api name: {"returns": JSON Schema, "accepts": {...}}}`` (a bare
    schema is read as "returns"). An API named there gets exactly these outputs; one not named
    keeps what it declared. Raises ApiGraphInputError for a name no API has."""
    if not isinstance(schemas, dict):
        raise ApiGraphInputError("output schemas: expected an object of API name -> {\"returns\": schema}")
    names = {a.name for a in apis}
    unknown = sorted(k for k in schemas if k not in names)
    if unknown:
        raise ApiGraphInputError(f"output schemas name APIs that are not in the list: {', '.join(unknown[:5])}")
    out = []
    for api in apis:
        entry = schemas.get(api.name)
        if not isinstance(entry, dict):
            out.append(api)
            continue
        accepts = entry.get("accepts") if isinstance(entry.get("accepts"), dict) else api.accepts
        if "returns" not in entry and "accepts" in entry:  # preconditions only: the outputs stay
            out.append(ApiNode(api.name, api.description, list(api.inputs), list(api.outputs), api.states,
                               dict(accepts or {})))
            continue
        returns = entry.get("returns", entry)
        out.append(ApiNode(api.name, api.description, list(api.inputs), outputs_of_schema(returns),
                           OS.record_states(returns), dict(accepts or {})))
    return out


def load_apis(data: Any) -> list[ApiNode]:
    """A list of APIs, a single API, or {"apis": [...]} in any supported shape."""
    if isinstance(data, dict) and isinstance(data.get("apis"), list):
        data = data["apis"]
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise ApiGraphInputError("expected a JSON list of APIs or {\"apis\": [...]}")
    return [node_from_dict(item, i) for i, item in enumerate(data)]


def graph_to_json(apis: list[ApiNode], edges: list[Edge], *, min_score: float, similarity: str) -> dict[str, Any]:
    return {"min_score": min_score, "similarity": similarity, "apis": [a.name for a in apis],
            "edges": [e.to_dict() for e in edges]}


def _dot_quote(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def graph_to_dot(apis: list[ApiNode], edges: list[Edge]) -> str:
    """Graphviz DOT; edge labels are the matched fields (output → input). Graphviz escapes
    labels when it renders SVG."""
    lines = ["digraph api_graph {", "  rankdir=LR;", '  node [shape=box, style="rounded", fontname="Helvetica"];',
             '  edge [fontname="Helvetica", fontsize=10];']
    for a in apis:
        lines.append(f"  {_dot_quote(a.name)};")
    for e in edges:
        parts = [f"{m.output} → {m.input}" for m in e.matches[:4]]
        if len(e.matches) > 4:
            parts.append(f"+{len(e.matches) - 4} more")
        label = '"' + "\\n".join(_dot_quote(p)[1:-1] for p in parts) + '"'
        lines.append(f"  {_dot_quote(e.source)} -> {_dot_quote(e.target)} [label={label}, penwidth={1 + 2 * e.score:.2f}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def dump(data: Any) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False)

"""The API compatibility graph over rows of the database or a file: load the APIs, build the
graph (generation.pipeline.api_graph), write JSON / DOT / SVG. Used by `manage.py api_graph` and
the API graph page."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from generation import embeddings
from generation.models import Api
from generation.pipeline import api_graph as G
from generation.pipeline.render import dot_to_svg as render_dot_to_svg

WORD_OVERLAP = "word overlap of descriptions"
MINILM = "MiniLM sentence embeddings of descriptions (all-MiniLM-L6-v2, offline)"


def nodes_from_rows(rows) -> list[G.ApiNode]:
    """ApiNodes from Api rows; an API name met twice (two procedures) is kept once."""
    seen: dict[str, G.ApiNode] = {}
    for api in rows:
        if api.name in seen:
            continue
        inputs = [G.Field(str(p.get("name")), str(p.get("type", "")), str(p.get("description", "")))
                  for p in api.parameters or [] if isinstance(p, dict) and p.get("name")]
        outputs = [G.Field(api.output_name, api.output_type, "")] if api.output_name else []  # declared only
        seen[api.name] = G.ApiNode(api.name, api.description, inputs, outputs)
    return list(seen.values())


def nodes_from_db(procedure_id: int | None = None) -> list[G.ApiNode]:
    qs = Api.objects.order_by("name", "id")
    if procedure_id is not None:
        qs = qs.filter(procedure_id=procedure_id)
    return nodes_from_rows(qs)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise G.ApiGraphInputError(f"{path}: no such file") from exc
    except json.JSONDecodeError as exc:
        raise G.ApiGraphInputError(f"{path}: line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc


def nodes_from_file(path: Path) -> list[G.ApiNode]:
    data = _read_json(path)
    try:
        return G.load_apis(data)
    except G.ApiGraphInputError as exc:
        raise G.ApiGraphInputError(f"{path}: {exc}") from exc


def with_output_schemas(apis: list[G.ApiNode], path: Path) -> list[G.ApiNode]:
    """The APIs with the output schemas of a file imported ({api name: {"returns", "accepts"}})."""
    data = _read_json(path)
    try:
        return G.apply_output_schemas(apis, data)
    except G.ApiGraphInputError as exc:
        raise G.ApiGraphInputError(f"{path}: {exc}") from exc


def build(apis: list[G.ApiNode], *, min_score: float = G.DEFAULT_MIN_SCORE,
          use_embeddings: bool = True) -> tuple[list[G.Edge], str]:
    """(edges, the description similarity used)."""
    if not 0.0 <= min_score <= 1.0:
        raise G.ApiGraphInputError(f"min score {min_score} is outside 0..1")
    embed = embeddings.embedder() if use_embeddings else None
    return G.build_graph(apis, min_score=min_score, embed=embed), (MINILM if embed else WORD_OVERLAP)


def dot_to_svg(dot: str) -> str:
    """SVG of `dot` (Graphviz through the graphviz package)."""
    return render_dot_to_svg(dot)


def render(apis: list[G.ApiNode], edges: list[G.Edge], fmt: str, *, min_score: float, similarity: str) -> str:
    if fmt == "json":
        return G.dump(G.graph_to_json(apis, edges, min_score=min_score, similarity=similarity)) + "\n"
    dot = G.graph_to_dot(apis, edges)
    if fmt == "dot":
        return dot
    if fmt == "svg":
        return dot_to_svg(dot)
    raise G.ApiGraphInputError(f"unknown output format {fmt!r}: use .json, .svg or .dot")


def summary(edges: list[G.Edge]) -> dict[str, Any]:
    return {"edges": len(edges), "chains": G.chains(edges, length=2, limit=10)}

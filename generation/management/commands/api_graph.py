"""manage.py api_graph --apis FILE [--outputs FILE] [--min-score S] --out FILE.json|FILE.svg|FILE.dot

The API compatibility graph (ToolDial): an edge A -> B for each output field of A that can fill
an input of B. FILE is a JSON list of APIs (tau-bench / tau2-bench tools, STAR api files, MCP tools
with outputSchema, the paper's {"name", "params", "output"}); without --apis, every API in the
database. Only declared outputs make edges: --outputs imports output schemas for APIs that declare
none ({api name: {"returns": JSON Schema, "accepts": {input: {"status": [...]}}}})."""
from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from generation import api_graphs as AG
from generation.pipeline import api_graph as G
from generation.pipeline.render import GraphvizMissing


class Command(BaseCommand):
    help = "Build the API compatibility graph and write it as JSON, SVG or DOT."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--apis", help="JSON file of APIs (default: every API in the database)")
        parser.add_argument("--procedure", type=int, help="only this procedure's APIs (database)")
        parser.add_argument("--outputs", help="JSON file of output schemas by API name")
        parser.add_argument("--min-score", type=float, default=G.DEFAULT_MIN_SCORE)
        parser.add_argument("--out", required=True, help="FILE.json, FILE.svg or FILE.dot")
        parser.add_argument("--no-embeddings", action="store_true", help="word overlap even with the ML extra")

    def handle(self, *args, **opts) -> None:
        out = Path(opts["out"])
        fmt = out.suffix.lower().lstrip(".")
        if fmt not in ("json", "svg", "dot"):
            raise CommandError(f"--out {out}: the file name must end in .json, .svg or .dot")
        try:
            apis = AG.nodes_from_file(Path(opts["apis"])) if opts["apis"] else AG.nodes_from_db(opts["procedure"])
            if opts["outputs"]:
                apis = AG.with_output_schemas(apis, Path(opts["outputs"]))
            edges, similarity = AG.build(apis, min_score=opts["min_score"], use_embeddings=not opts["no_embeddings"])
            text = AG.render(apis, edges, fmt, min_score=opts["min_score"], similarity=similarity)
        except (G.ApiGraphInputError, GraphvizMissing, RuntimeError) as exc:
            raise CommandError(str(exc)) from exc
        out.write_text(text, encoding="utf-8")
        self.stdout.write(f"{len(apis)} APIs, {len(edges)} edges (min score {opts['min_score']}, "
                          f"{similarity}) -> {out}")

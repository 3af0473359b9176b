"""Command-line entry points; the Django management commands are thin wrappers around these.

Exit codes: 0 success / valid, 1 invalid input, 2 unreadable input.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import IO

from .apis import ApiFormatError, ApiSpec, parse_api_text
from .build import BuildError, build_offline
from .formats import GraphFormatError, load_graph, write_graph_text
from .mermaid import mermaid_to_flowgraph
from .render import to_code, to_dot, to_mermaid, to_outline
from .sampling import SAMPLERS, SamplingError
from .validate import errors, validate_conversation_graph, validate_flowgraph

EXIT_OK, EXIT_INVALID, EXIT_UNREADABLE = 0, 1, 2


def _read(path: str | Path) -> str:
    return Path(path).read_text(encoding="utf-8")


def load_apis(path: str | Path) -> list[ApiSpec]:
    return parse_api_text(_read(path))


def validate_graph_main(path: str | Path, kind: str | None = None, out: IO[str] | None = None,
                        apis: str | Path | None = None) -> int:
    """``validate_graph FILE [--kind flowgraph|conversation]``: one line per violation."""
    out = out or sys.stdout
    try:
        g = load_graph(_read(path), kind)
        api_names = [a.name for a in load_apis(apis)] if apis else None
    except (OSError, UnicodeDecodeError) as exc:
        out.write(f"error: cannot read {path}: {exc}\n")
        return EXIT_UNREADABLE
    except (GraphFormatError, ApiFormatError) as exc:
        out.write(f"error: {path}: {exc}\n")
        return EXIT_UNREADABLE
    kind = kind or g.graph.get("kind", "flowgraph")
    if kind == "conversation":
        violations = validate_conversation_graph(g, api_names)
    else:
        violations = validate_flowgraph(g, api_names)
    for v in violations:
        out.write(f"{v}\n")
    return EXIT_INVALID if errors(violations) else EXIT_OK


def build_tests_main(flowgraph: str | Path, apis: str | Path, out_dir: str | Path,
                     paths: int | None = None, sampler: str = "algorithm1", noise: float = 0.0,
                     seed: int = 0, out: IO[str] | None = None) -> int:
    """``build_tests``: writes conversation_graph.txt, paths.json, conversations.jsonl,
    tests.jsonl and stats.json into ``out_dir``."""
    out = out or sys.stdout
    if sampler not in SAMPLERS:
        out.write(f"error: unknown sampler {sampler!r}; expected one of {', '.join(SAMPLERS)}\n")
        return EXIT_INVALID
    if not 0.0 <= noise <= 1.0:
        out.write(f"error: --noise must be between 0 and 1, got {noise}\n")
        return EXIT_INVALID
    try:
        g = load_graph(_read(flowgraph), "flowgraph")
        api_list = load_apis(apis)
    except (OSError, UnicodeDecodeError, GraphFormatError, ApiFormatError) as exc:
        out.write(f"error: {exc}\n")
        return EXIT_UNREADABLE
    try:
        result = build_offline(g, api_list, paths=paths, sampler=sampler, noise=noise, seed=seed)
    except BuildError as exc:
        for v in exc.violations:
            out.write(f"{v}\n")
        return EXIT_INVALID
    except SamplingError as exc:
        out.write(f"error: {exc}\n")
        return EXIT_INVALID
    target = Path(out_dir)
    target.mkdir(parents=True, exist_ok=True)
    (target / "conversation_graph.txt").write_text(write_graph_text(result.conversation_graph), encoding="utf-8")
    (target / "paths.json").write_text(json.dumps(result.paths) + "\n", encoding="utf-8")
    with open(target / "conversations.jsonl", "w", encoding="utf-8") as fh:
        for conv in result.conversations:
            fh.write(json.dumps(conv, ensure_ascii=False) + "\n")
    with open(target / "tests.jsonl", "w", encoding="utf-8") as fh:
        for t in result.tests:
            fh.write(json.dumps(t, ensure_ascii=False) + "\n")
    (target / "stats.json").write_text(json.dumps(result.stats, indent=2) + "\n", encoding="utf-8")
    for v in result.violations:
        out.write(f"{v}\n")
    if result.note:
        out.write(f"note: {result.note}\n")
    s = result.stats
    out.write(f"{s['paths']} paths, {s['tests']} tests, node coverage {s['node_coverage']:.0%}, "
              f"edge coverage {s['edge_coverage']:.0%} -> {target}\n")
    return EXIT_INVALID if result.violations else EXIT_OK


FROM_FORMATS = ("mermaid", "flowgraph")
TO_FORMATS = ("flowgraph", "mermaid", "code", "dot", "text")


def convert_workflow_main(path: str | Path, src: str, dst: str, apis: str | Path | None = None,
                          out: IO[str] | None = None, err: IO[str] | None = None) -> int:
    """``convert_workflow FILE --from mermaid|flowgraph --to flowgraph|mermaid|code|dot|text``.

    The converted document goes to ``out``; the Mermaid import report goes to ``err``, one
    ``report: ...`` line per item.
    """
    out, err = out or sys.stdout, err or sys.stderr
    if src not in FROM_FORMATS or dst not in TO_FORMATS:
        err.write(f"error: --from must be one of {FROM_FORMATS} and --to one of {TO_FORMATS}\n")
        return EXIT_INVALID
    try:
        text = _read(path)
        tools = load_apis(apis) if apis else []
        if src == "mermaid":
            g, report = mermaid_to_flowgraph(text, tools)
            for line in report:
                err.write(f"report: {line}\n")
        else:
            g = load_graph(text)
    except (OSError, UnicodeDecodeError, GraphFormatError, ApiFormatError) as exc:
        err.write(f"error: {exc}\n")
        return EXIT_UNREADABLE
    renderers = {"flowgraph": write_graph_text, "mermaid": to_mermaid, "code": to_code,
                 "dot": to_dot, "text": to_outline}
    out.write(renderers[dst](g))
    return EXIT_OK

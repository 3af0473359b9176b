"""Command-line entry points; the Django management commands are thin wrappers around these.

Exit codes: 0 success / valid, 1 invalid input, 2 unreadable input.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import IO

from .apis import ApiFormatError, ApiSpec, parse_api_list, parse_api_text
from .build import BuildError, build_offline
from .formats import GraphFormatError, load_graph, write_graph_text
from .mermaid import MermaidSyntaxError, mermaid_to_flowgraph
from .mermaid.syntax import looks_like_mermaid
from .toolspecs import dedupe_apis, is_flowbench_record, load_structured, select_record
from .render import to_code, to_dot, to_mermaid, to_outline
from .sampling import SAMPLERS, SamplingError
from .validate import errors, validate_conversation_graph, validate_flowgraph

EXIT_OK, EXIT_INVALID, EXIT_UNREADABLE = 0, 1, 2


def _read(path: str | Path) -> str:
    return Path(path).read_text(encoding="utf-8")


def load_apis(path: str | Path, record: int | None = None, log: IO[str] | None = None) -> list[ApiSpec]:
    """Any tool format (see :mod:`.apis`), or the APIs of one record of a FlowBench release; what
    the document declares but is not kept is written to ``log`` as ``report: not kept: ...`` lines."""
    text = _read(path)
    try:
        if text.lstrip("\ufeff").lstrip()[:1] in ("{", "["):
            data = select_record(load_structured(text, str(path)), record, str(path))
            apis = parse_api_list(data)
        else:
            apis = parse_api_text(text)
        for line in getattr(apis, "report", []):
            (log or sys.stderr).write(f"report: not kept: {line}\n")
        return apis
    except ApiFormatError as exc:
        msg = str(exc)
        raise ApiFormatError(msg if msg.startswith(str(path)) else f"{path}: {msg}") from None


def flowbench_chart(text: str, path: str | Path, record: int | None) -> tuple[str, list[ApiSpec], str] | None:
    """(flowchart, APIs, where) when ``text`` is a FlowBench release record, else None."""
    if text.lstrip("\ufeff").lstrip()[:1] not in ("{", "["):
        return None
    try:
        data = load_structured(text, str(path))
    except ApiFormatError:
        if text.lstrip("\ufeff").lstrip().startswith("{"):
            raise
        return None  # not JSON: the bracket format starts with '[' too
    items = data if isinstance(data, list) else [data]
    if not items or not all(is_flowbench_record(d) for d in items):
        return None
    rec = select_record(items, record, str(path))
    number = items.index(rec) + 1
    chart = rec["workflow"].get("flowchart")
    where = f"{path}, line {number} (record {number}), key 'workflow.flowchart'"
    if not isinstance(chart, str) or not chart.strip():
        raise ApiFormatError(f"{where}: is missing or empty")
    try:
        apis = parse_api_list({"apis": dedupe_apis(rec.get("apis") or [])[0]})
    except ApiFormatError as exc:
        raise ApiFormatError(f"{path}, line {number} (record {number}), key 'apis': {exc}") from None
    return chart, apis, where


def load_flowgraph(path: str | Path, tools: list[ApiSpec] | None = None, record: int | None = None,
                   strict: bool = True, err: IO[str] | None = None):
    """A flowgraph file, or a Mermaid chart / FlowBench record converted on the way in."""
    text = _read(path)
    fb = flowbench_chart(text, path, record)
    if fb is None and not looks_like_mermaid(text, str(path)):
        return load_graph(text, "flowgraph")
    chart, apis, where = fb if fb else (text, tools or [], str(path))
    try:
        g, report = mermaid_to_flowgraph(chart, tools if tools else apis, strict=strict)
    except MermaidSyntaxError as exc:
        exc.where = where
        raise
    for line in report:
        (err or sys.stderr).write(f"report: {line}\n")
    if fb:
        g.graph["apis"] = apis
    return g


def release_size(path: str | Path) -> int:
    """How many FlowBench records the file holds (0 when it is not a FlowBench release)."""
    try:
        text = _read(path)
        if text.lstrip("\ufeff").lstrip()[:1] not in ("{", "["):
            return 0
        data = load_structured(text, str(path))
    except (OSError, UnicodeDecodeError, ApiFormatError):
        return 0
    items = data if isinstance(data, list) else [data]
    return len(items) if items and all(is_flowbench_record(d) for d in items) else 0


def each_record(main, release: str | Path, log: IO[str], **kwargs) -> int:
    """Run ``main`` once per record of a multi-record release; the worst exit code wins."""
    worst = EXIT_OK
    for k in range(1, release_size(release) + 1):
        log.write(f"== {release} record {k}\n")
        worst = max(worst, main(record=k, **kwargs))
    return worst


def _refuse_chart(exc: MermaidSyntaxError, path: str | Path, out: IO[str]) -> int:
    where = getattr(exc, "where", str(path))
    for p in exc.problems:
        out.write(f"error: {where}: {p}\n")
    if exc.problems and exc.problems[-1].message.startswith("the chart is empty"):
        out.write("error: the chart was refused: there is nothing to convert\n")
    else:
        out.write("error: the chart was refused (use --lenient to convert what can be read)\n")
    return EXIT_INVALID


def validate_graph_main(path: str | Path, kind: str | None = None, out: IO[str] | None = None,
                        apis: str | Path | None = None, record: int | None = None,
                        lenient: bool = False) -> int:
    """``validate_graph FILE [--kind flowgraph|conversation]``: one line per violation.

    A FlowBench release with several records and no ``record`` is validated record by record."""
    out = out or sys.stdout
    if record is None and kind != "conversation" and release_size(path) > 1:
        return each_record(validate_graph_main, path, out, path=path, kind=kind, out=out, apis=apis,
                           lenient=lenient)
    try:
        tools = load_apis(apis, record, out) if apis else None
        if kind == "conversation":
            g = load_graph(_read(path), kind)
        else:
            g = load_flowgraph(path, tools, record, strict=not lenient, err=out)
            kind = kind or g.graph.get("kind")
        own = g.graph.pop("apis", None)
        if tools is None and own is not None:
            tools = own
        api_names = [a.name for a in tools] if tools is not None else None
    except MermaidSyntaxError as exc:
        return _refuse_chart(exc, path, out)
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
                     seed: int = 0, out: IO[str] | None = None, record: int | None = None,
                     lenient: bool = False) -> int:
    """``build_tests``: writes conversation_graph.txt, paths.json, conversations.jsonl,
    tests.jsonl and stats.json into ``out_dir``."""
    out = out or sys.stdout
    if record is None and release_size(flowgraph) > 1:  # a whole release: one folder per record
        return each_record(lambda record, **kw: build_tests_main(out_dir=Path(out_dir) / f"record-{record:03d}",
                                                                  record=record, **kw),
                           flowgraph, out, flowgraph=flowgraph, apis=apis, paths=paths, sampler=sampler,
                           noise=noise, seed=seed, out=out, lenient=lenient)
    if sampler not in SAMPLERS:
        out.write(f"error: unknown sampler {sampler!r}; expected one of {', '.join(SAMPLERS)}\n")
        return EXIT_INVALID
    if not 0.0 <= noise <= 1.0:
        out.write(f"error: --noise must be between 0 and 1, got {noise}\n")
        return EXIT_INVALID
    try:
        api_list = load_apis(apis, record, out)
        g = load_flowgraph(flowgraph, api_list, record, strict=not lenient, err=out)
        g.graph.pop("apis", None)
    except MermaidSyntaxError as exc:
        return _refuse_chart(exc, flowgraph, out)
    except GraphFormatError as exc:
        out.write(f"error: {flowgraph}: {exc}\n")
        return EXIT_UNREADABLE
    except (OSError, UnicodeDecodeError, ApiFormatError) as exc:
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
    return EXIT_INVALID if errors(result.violations) else EXIT_OK


FROM_FORMATS = ("mermaid", "flowbench", "flowgraph")
TO_FORMATS = ("flowgraph", "mermaid", "code", "dot", "text")


def convert_workflow_main(path: str | Path, src: str, dst: str, apis: str | Path | None = None,
                          out: IO[str] | None = None, err: IO[str] | None = None,
                          record: int | None = None, lenient: bool = False) -> int:
    """``convert_workflow FILE --from mermaid|flowbench|flowgraph --to flowgraph|mermaid|code|dot|text``.

    FILE may be Mermaid text or a FlowBench release (JSON Lines; ``record`` picks one, 1-based),
    whose own APIs are used unless ``apis`` is given. The converted document goes to ``out``; the
    import report goes to ``err``, one ``report: ...`` line per item. Malformed Mermaid exits 1
    with each problem's line and column unless ``lenient``.
    """
    out, err = out or sys.stdout, err or sys.stderr
    if record is None and src != "flowgraph" and release_size(path) > 1:
        return each_record(convert_workflow_main, path, out, path=path, src=src, dst=dst, apis=apis, out=out,
                           err=err, lenient=lenient)
    if src not in FROM_FORMATS or dst not in TO_FORMATS:
        err.write(f"error: --from must be one of {FROM_FORMATS} and --to one of {TO_FORMATS}\n")
        return EXIT_INVALID
    try:
        tools = load_apis(apis, record, err) if apis else []
        if src in ("mermaid", "flowbench"):
            text = _read(path)
            fb = flowbench_chart(text, path, record)
            chart, own, where = fb if fb else (text, [], str(path))
            g, report = mermaid_to_flowgraph(chart, tools or own, strict=not lenient)
            for line in report:
                err.write(f"report: {line}\n")
        else:
            g = load_graph(_read(path))
    except MermaidSyntaxError as exc:
        exc.where = where
        return _refuse_chart(exc, path, err)
    except (OSError, UnicodeDecodeError, GraphFormatError, ApiFormatError) as exc:
        err.write(f"error: {path}: {exc}\n" if str(path) not in str(exc) else f"error: {exc}\n")
        return EXIT_UNREADABLE
    renderers = {"flowgraph": write_graph_text, "mermaid": to_mermaid, "code": to_code,
                 "dot": to_dot, "text": to_outline}
    out.write(renderers[dst](g))
    return EXIT_OK

"""Command line of the standalone runner (see the package docstring)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit, urlunsplit

from evaluation import metrics as M
from evaluation.http_agent import HttpAgent, auth_headers
from evaluation.runner import core, gates
from evaluation.runner.junit import write_junit
from evaluation.runner.release_file import ReleaseFileError, load


class Progress:
    """A one-line progress bar on a terminal; silent otherwise (CI logs stay clean)."""

    def __init__(self, stream: TextIO, enabled: bool | None = None) -> None:
        self.stream = stream
        self.enabled = stream.isatty() if enabled is None else enabled
        self.started = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        width = 30
        filled = int(width * done / total) if total else width
        elapsed = time.monotonic() - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (total - done) / rate if rate else 0.0
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}  {rate:.1f} tests/s  "
                          f"ETA {eta:.0f} s ")
        if done == total:
            self.stream.write("\n")
        self.stream.flush()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m evaluation.runner",
                                description="Evaluate an agent on a portable Almita release file.")
    p.add_argument("release", help="the portable release file (.jsonl) exported by Almita Studio")
    p.add_argument("--agent-url", required=True, help="the agent's URL (kind http) or an OpenAI-compatible base URL")
    p.add_argument("--agent-kind", choices=("http", "openai"), default="http",
                   help="http: the almita-agent/1 protocol (default); openai: POST {URL}/chat/completions")
    p.add_argument("--model", default="", help="--agent-kind openai: the model name")
    p.add_argument("--system-prompt-file", help="--agent-kind openai: the agent's own system prompt")
    p.add_argument("--knowledge", choices=("procedure", "mermaid", "code", "none"), default="procedure",
                   help="what the http protocol sends as knowledge (default: procedure)")
    p.add_argument("--auth-env", help="NAME of an environment variable holding the agent's secret")
    p.add_argument("--auth-header", default="Authorization", help="header carrying the secret (Bearer for Authorization)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per request (default 30)")
    p.add_argument("--retries", type=int, default=2, help="retries on 429/5xx/timeouts (default 2)")
    p.add_argument("--concurrency", type=int, default=8, help="requests in flight at once (default 8)")
    p.add_argument("--threshold", type=float, default=0.55, help="reply similarity threshold (lexical F1)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap samples for the 95%% intervals")
    p.add_argument("--fail-under", action="append", default=[], metavar="METRIC=VALUE",
                   help="exit 1 when METRIC is below VALUE (0..1 or N%%); repeatable")
    p.add_argument("--baseline", help="a results file (--json of an earlier run): exit 1 on a regression")
    p.add_argument("--junit", help="write JUnit XML here")
    p.add_argument("--json", help="write the results (metrics, gates, one record per test) here")
    p.add_argument("--limit", type=int, help="only the first N tests")
    p.add_argument("--quiet", action="store_true")
    return p


def public_url(url: str) -> str:
    """The URL without any user:password part, for reports."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else ""))) \
        if parts.hostname else url


def metric_lines(metrics: dict[str, Any]) -> list[str]:
    lines = []
    for key, m in M.metrics_from_json(metrics).items():
        value = f"{m.percent:6.1f}%" if m.value is not None else "     –"
        ci = f"  [{100 * m.ci_low:.1f}, {100 * m.ci_high:.1f}]" if m.ci_low is not None and m.ci_high is not None else ""
        lines.append(f"  {m.label:<26} {value}  {m.numerator:>6}/{m.denominator:<6}{ci}")
    return lines


def main(argv: list[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    args = parser().parse_args(argv)
    try:
        thresholds = [gates.parse_threshold(t) for t in args.fail_under]
        baseline = gates.load_baseline(args.baseline) if args.baseline else None
        release = load(args.release)
        secret = None
        if args.auth_env:
            secret = os.environ.get(args.auth_env)
            if not secret:
                raise ValueError(f"--auth-env {args.auth_env}: the environment variable is not set")
        system_prompt = Path(args.system_prompt_file).read_text(encoding="utf-8") if args.system_prompt_file else ""
        if args.agent_kind == "openai" and not args.model:
            raise ValueError("--agent-kind openai needs --model")
        agent = HttpAgent(url=args.agent_url, kind=args.agent_kind, model=args.model, system_prompt=system_prompt,
                          knowledge=args.knowledge, release=release.label,
                          headers=auth_headers(args.auth_header, secret), timeout=args.timeout,
                          retries=max(0, args.retries), concurrency=max(1, args.concurrency))
    except (gates.GateError, ReleaseFileError, ValueError, OSError) as exc:
        err.write(f"error: {exc}\n")
        return 2
    tests = release.tests[: args.limit] if args.limit else release.tests
    if not args.quiet:
        err.write(f"{release.label}: {len(tests)} tests -> {args.agent_url} ({args.agent_kind}, "
                  f"concurrency {agent.concurrency})\n")
    started = time.monotonic()
    records = core.evaluate(tests, agent.ask, threshold=args.threshold, concurrency=agent.concurrency,
                            progress=None if args.quiet else Progress(err), prepare=release.with_workflow)
    elapsed = time.monotonic() - started
    summary = core.report(records, bootstrap=max(0, args.bootstrap))
    results = gates.check_thresholds(summary["metrics"], thresholds)
    if baseline is not None:
        try:
            results += gates.check_baseline(records, summary["metrics"], baseline, bootstrap=max(0, args.bootstrap))
        except gates.GateError as exc:
            err.write(f"error: {exc}\n")
            return 2
    doc = core.results_document(records, summary, release=release.meta | {"label": release.label},
                                agent={"url": public_url(args.agent_url), "kind": args.agent_kind, "model": args.model},
                                threshold=args.threshold, similarity="lexical", gates=results, elapsed=elapsed)
    if args.json:
        Path(args.json).write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")
    if args.junit:
        write_junit(args.junit, records, results, release=release.label, elapsed=elapsed, timestamp=doc["created_at"],
                    properties={"agent_url": public_url(args.agent_url), "agent_kind": args.agent_kind})
    if not args.quiet:
        out.write(f"{release.label}: {len(records)} tests in {elapsed:.1f} s, unparseable answers: "
                  f"{summary['unparseable']}\n")
        out.write("\n".join(metric_lines(summary["metrics"])) + "\n")
        for g in results:
            out.write(f"  {'PASS' if g['passed'] else 'FAIL'}  {g['message']}\n")
    return 0 if doc["passed"] else 1

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
from evaluation import run_health as H
from evaluation.http_agent import DEFAULT_RETRIES, DEFAULT_TIMEOUT, HttpAgent, auth_headers
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
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help=f"seconds per request (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--retries", type=int, default=DEFAULT_RETRIES,
                   help=f"retries on 429/5xx/timeouts/connection errors (default {DEFAULT_RETRIES})")
    p.add_argument("--max-error-share", default=str(H.DEFAULT_MAX_ERROR_SHARE), metavar="SHARE",
                   help="exit 3 when more tests than this share (0..1 or N%%) got no answer or an unreadable "
                        "one (default 0.1)")
    p.add_argument("--breaker", type=int, default=H.BREAKER_AFTER, metavar="N",
                   help=f"stop after N consecutive requests without an answer (default {H.BREAKER_AFTER}; 0: never)")
    p.add_argument("--trials", type=int, default=1, help="answers per test, for pass^k / pass@k (default 1)")
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


EXIT_PASSED, EXIT_GATE, EXIT_USAGE, EXIT_AGENT = 0, 1, 2, 3


def main(argv: list[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Exit status: 0 every gate met; 1 a gate or the baseline failed; 2 usage (bad option, file,
    or a baseline from another release); 3 the agent or the infrastructure failed (never 0)."""
    err = stderr or sys.stderr
    try:
        return _main(argv, stdout or sys.stdout, err)
    except Exception as exc:  # noqa: BLE001 - a crash of the runner must not read as a failed gate (1)
        err.write(f"error: the runner failed: {type(exc).__name__}: {exc}\n")
        return EXIT_AGENT


def _setup(args, err: TextIO):
    thresholds = [gates.parse_threshold(t) for t in args.fail_under]
    release = load(args.release)
    baseline = gates.load_baseline(args.baseline) if args.baseline else None
    if baseline is not None:
        gates.check_same_release(release.identity, baseline)
    secret = None
    if args.auth_env:
        secret = os.environ.get(args.auth_env)
        if not secret:
            raise ValueError(f"--auth-env {args.auth_env}: the environment variable is not set")
    system_prompt = Path(args.system_prompt_file).read_text(encoding="utf-8") if args.system_prompt_file else ""
    if args.agent_kind == "openai" and not args.model:
        raise ValueError("--agent-kind openai needs --model")
    if not 1 <= args.trials <= 20:
        raise ValueError(f"--trials {args.trials}: between 1 and 20")
    limit = H.check_limit(args.max_error_share)
    agent = HttpAgent(url=args.agent_url, kind=args.agent_kind, model=args.model, system_prompt=system_prompt,
                      knowledge=args.knowledge, release=release.label,
                      headers=auth_headers(args.auth_header, secret), timeout=args.timeout,
                      retries=max(0, args.retries), concurrency=max(1, args.concurrency),
                      breaker=H.Breaker(max(0, args.breaker)))
    return thresholds, release, baseline, limit, agent


def _main(argv: list[str] | None, out: TextIO, err: TextIO) -> int:
    args = parser().parse_args(argv)
    try:
        thresholds, release, baseline, limit, agent = _setup(args, err)
    except (gates.GateError, ReleaseFileError, ValueError, OSError) as exc:
        err.write(f"error: {exc}\n")
        return EXIT_USAGE
    tests = release.tests[: args.limit] if args.limit else release.tests
    if not args.quiet:
        err.write(f"{release.label}: {len(tests)} tests x {args.trials} trial(s) -> {args.agent_url} "
                  f"({args.agent_kind}, concurrency {agent.concurrency})\n")
    started = time.monotonic()
    breaker = agent.breaker
    records = core.evaluate(tests, agent.ask, threshold=args.threshold, concurrency=agent.concurrency,
                            progress=None if args.quiet else Progress(err), prepare=release.with_workflow,
                            trials=args.trials, breaker=breaker)
    elapsed = time.monotonic() - started
    summary = core.report(records, bootstrap=max(0, args.bootstrap), max_error_share=limit, stopped=breaker.tripped)
    results = gates.check_thresholds(summary["metrics"], thresholds)
    if baseline is not None:
        try:
            results += gates.check_baseline(records, summary["metrics"], baseline, bootstrap=max(0, args.bootstrap))
        except gates.GateError as exc:
            err.write(f"error: {exc}\n")
            return EXIT_USAGE
    doc = core.results_document(records, summary, release={**release.meta, **release.identity, "label": release.label},
                                agent={"url": public_url(args.agent_url), "kind": args.agent_kind, "model": args.model},
                                threshold=args.threshold, similarity="lexical", gates=results, elapsed=elapsed)
    try:
        if args.json:
            Path(args.json).write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")
        if args.junit:
            write_junit(args.junit, records, results, release=release.label, elapsed=elapsed,
                        timestamp=doc["created_at"], health=summary["errors"],
                        properties={"agent_url": public_url(args.agent_url), "agent_kind": args.agent_kind})
    except OSError as exc:
        err.write(f"error: cannot write the results: {exc}\n")
        return EXIT_USAGE
    if not args.quiet:
        out.write(f"{release.label}: {len(records)} answers in {elapsed:.1f} s; no answer: "
                  f"{summary['errors']['outages']}, unreadable: {summary['errors']['unreadable']}\n")
        out.write("\n".join(metric_lines(summary["metrics"])) + "\n")
        for g in results:
            out.write(f"  {'PASS' if g['passed'] else 'FAIL'}  {g['message']}\n")
    if summary["status"] == "failed":
        err.write(f"error: the run failed: {summary['reason']}\n")
        return EXIT_AGENT
    return EXIT_PASSED if doc["passed"] else EXIT_GATE

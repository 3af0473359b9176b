"""Ablation: run a floor's bench with one piece of machinery and without it, interleaved.

    .venv/bin/python bench/ablation.py --piece prepared --bench review_http -- --db postgres --svg cached
    .venv/bin/python bench/ablation.py --piece backends --bench scale -- --sizes 5000 --repeat 5
    .venv/bin/python bench/ablation.py --piece all --bench review_http -- --db sqlite --svg both
    .venv/bin/python bench/ablation.py --list

Each piece of issue #29 was removed by one commit whose subject names it ("remove …"). The
"with" tree is that commit's parent, the "without" tree the commit itself, both extracted with
``git archive`` under var/ablation/ (the shared .venv linked in); the bench scripts of this
checkout are copied into both, so the same bench measures the two codes. Runs alternate
with, without, with, without … (``--rounds``), so a change in the machine's load hits both
sides alike; every run's own output is printed, then the figures the floor names side by side
with their ratio (without / with). On a machine busy with other work the figures are noisy:
read the ratios, and run more rounds.

Measured 2026-11-26 (issue #29) on the 2-core machine while other sessions kept its load average
at 6-15, review_http with 8 clients, 40 lineages, 12-15 verdicts per client, medians of 2-3
interleaved pairs (without/with; server CPU per verdict is the steadiest figure under such load):

* all item-2 pieces at once: SQLite SVG cached claim+page p95 ×2.95, submit p95 ×6.6,
  verdicts/s ×0.43; PostgreSQL cached ×2.5, ×2.2, ×0.67; server CPU per verdict 6.6-9.4 → 12.8-17.5 ms
  (SQLite), 5.2-12.2 → 10.6-16.7 ms (PostgreSQL). Neither side met the floor at that load.
* prepared (PostgreSQL): ×0.83, ×1.10, ×1.30 verdicts/s: no loss measured.
* rows (row fetcher, auth backend; PostgreSQL): p95 ×1.12/×1.14, verdicts/s ×0.60, server CPU per
  verdict 6.6-8.0 → 13.1-14.1 ms: the largest single cost measured.
* backends (SQLite writer queue): ×0.84, ×0.91, verdicts/s ×1.32: no loss measured.
* production (request class, gc/GIL tuning, Connection: close; SQLite): ×1.06, ×1.79, ×0.80.
* writes (hand-built writes; SQLite): ×2.02, ×1.91, verdicts/s ×1.00.
* graphviz (SQLite, SVG cold: the page draws a graph the worker has not drawn, through the dot
  program instead of the in-process library): claim+page p95 ×2.98, verdicts/s ×0.40. With the
  worker drawing when graphs are stored, the review path reads stored drawings (the cached case).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "var" / "ablation"

# piece -> text in the subject of the commit that removed it
PIECES = {
    "prepared": "remove server-side prepared statements",
    "rows": "remove the row fetcher",
    "writes": "remove the hand-built writes",
    "backends": "remove the database backend subclasses",
    "production": "remove the self-clearing request class",
    "graphviz": "Graphviz through the graphviz package",
    "format1": "one release format",
}
BENCHES = {"review_http": "bench/review_http.py", "scale": "bench/scale.py", "export": "bench/export.py"}
# The figures each bench prints that the floor names: (label, regex with one number group).
FIGURES = {
    "review_http": [
        (f"{vendor} {svg} {what}", rf"{vendor}\s+SVG {svg}\s+claim\+page p95\s+([\d.]+)\s+submit p95\s+([\d.]+)\s+"
                                   r"([\d.]+) verdicts/s", i)
        for vendor in ("sqlite", "postgresql") for svg in ("cached", "cold")
        for i, what in enumerate(("claim+page p95 ms", "submit p95 ms", "verdicts/s"))
    ],
    "scale": [("claim-next p95 ms", r"claim[- ]next\S*\s.*?p95\s*=?\s*([\d.]+)", 0),
              ("release s", r"release\S*\s.*?([\d.]+)\s*s\b", 0)],
    "export": [(name, rf"^{re.escape(name)}\s+[\d,]+ rows\s+[\d.]+ s\s+([\d,]+) rows/s", 0) for name in (
        "JSONL download (slim rows)", "CSV download (slim rows)", "HF tests.jsonl (slim rows)",
        "JSONL download (whole rows)", "CSV download (whole rows)")],
}


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def removal_commit(piece: str) -> str:
    found = git("log", "--format=%H", "-F", "--grep", PIECES[piece], "HEAD").splitlines()
    if not found:
        sys.exit(f"no commit in this branch's history names {PIECES[piece]!r}")
    return found[-1]  # the first one


def tree(rev: str) -> Path:
    """The code at `rev`, with this checkout's bench scripts and the shared .venv."""
    target = WORK / rev[:12]
    if not (target / "manage.py").exists():
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        data = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True).stdout
        with tarfile.open(fileobj=BytesIO(data)) as tar:
            tar.extractall(target)  # (our own repository's archive)
        (target / ".venv").symlink_to((ROOT / ".venv").resolve())
    shutil.rmtree(target / "bench")
    shutil.copytree(ROOT / "bench", target / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    return target


def run(where: Path, bench: str, args: list[str]) -> str:
    env = {**os.environ, "PYTHONPATH": str(where)}
    out = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), BENCHES[bench], *args], cwd=where, env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"the bench failed in {where}:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}")
    return out.stdout


def figures(bench: str, text: str) -> dict[str, float]:
    got = {}
    for label, pattern, group in FIGURES[bench]:
        m = re.search(pattern, text, re.M)
        if m:
            got[label] = float(m.group(group + 1).replace(",", ""))
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--piece", choices=sorted([*PIECES, "all"]))
    parser.add_argument("--bench", choices=sorted(BENCHES), default="review_http")
    parser.add_argument("--rounds", type=int, default=2, help="with/without pairs, interleaved")
    parser.add_argument("--list", action="store_true", help="the pieces and the commits that removed them")
    parser.add_argument("bench_args", nargs="*", help="after --: passed to the bench")
    args = parser.parse_args()
    if args.list or not args.piece:
        for piece, subject in PIECES.items():
            try:
                rev = removal_commit(piece)[:12]
            except SystemExit:
                rev = "(not in this history)"
            print(f"{piece:<12} {rev}  {subject}")
        return
    if args.piece == "all":  # every item-2 piece at once: before the first removal, and this checkout's HEAD
        base, without = git("rev-parse", f"{removal_commit('prepared')}^"), git("rev-parse", "HEAD")
    else:
        without = removal_commit(args.piece)
        base = git("rev-parse", f"{without}^")
    sides = {"with": tree(base), "without": tree(without)}
    seen: dict[str, list[dict[str, float]]] = {"with": [], "without": []}
    for r in range(args.rounds):
        for side in ("with", "without"):
            text = run(sides[side], args.bench, args.bench_args)
            print(f"===== round {r + 1}, {args.piece} {side}: {sides[side].name}\n{text.rstrip()}\n", flush=True)
            seen[side].append(figures(args.bench, text))
    print(f"\n{args.piece}: median of {args.rounds} interleaved runs ({args.bench} {' '.join(args.bench_args)}); "
          f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"  {'figure':<38}{'with':>10}{'without':>10}{'without/with':>14}")
    for label in dict.fromkeys(k for runs in seen.values() for d in runs for k in d):
        w = [d[label] for d in seen["with"] if label in d]
        wo = [d[label] for d in seen["without"] if label in d]
        if w and wo:
            a, b = statistics.median(w), statistics.median(wo)
            print(f"  {label:<38}{a:>10.1f}{b:>10.1f}{(b / a if a else float('nan')):>14.2f}")


if __name__ == "__main__":
    main()

"""The benches that judge issue #29's floor still run, at a tiny size, end to end.

The generation bench had stopped at its first line (its schema-from-models setup named the apps by
hand and missed the projects app) and nothing noticed until its figures were wanted. These runs
judge nothing about speed; they check that each bench starts, does its work and prints the line
its figure is read from. Each runs on its own throw-away SQLite database (the suite's
DATABASE_URL is removed: the scale bench creates and drops a test database by that name).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _bench(*args: str, timeout: float = 180, codes: tuple[int, ...] = (0,)) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ALMITA_VAR_DIR", "CELERY_BROKER_URL")}
    result = subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode in codes, result.stdout[-2000:] + result.stderr[-3000:]
    return result.stdout


@pytest.mark.slow
def test_the_generation_overhead_bench_runs_a_job_through_a_real_worker():
    # Exit 1 says the floor was missed, which 16 calls cannot judge (a fixed start-up cost is a
    # quarter of their ideal 0.5 s); the run itself must finish and print its row.
    out = _bench("bench/generation.py", "--part", "overhead", "--calls", "16", "--concurrency", "8", codes=(0, 1))
    row = re.search(r"^\s+8\s+16\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", out, re.M)
    assert row, out
    assert float(row.group(2)) >= 1.0  # the LLM stage cannot beat the endpoint's latency
    assert re.search(r"conversations [\d.]+ s \(16 items\)", out), out
    # Ratios move with the machine's speed: the run says how fast the machine was.
    assert re.search(r"machine speed: reference loop [\d.]+ ms before, [\d.]+ ms after", out), out


@pytest.mark.slow
def test_the_scale_bench_times_an_automatic_release_of_every_test():
    out = _bench("bench/scale.py", "--sizes", "500", "--only", "release")
    found = re.search(r"release automatic \((\d+) tests\) at 500 items: (\d+) queries", out)
    assert found and int(found.group(1)) == 800, out


@pytest.mark.slow
def test_the_scale_bench_times_every_page_and_action_once():
    out = _bench("bench/scale.py", "--sizes", "500", "--repeat", "2")
    rows = re.findall(r"^(\S.*?)\s+[\d.]+\s+[\d.]+\s+[\d.]+×$", out, re.M)
    assert len(rows) == len(set(rows)), rows  # one row per operation
    # Assigning and unassigning are two actions (two requests), each timed alone.
    for op in (r"assign \d+ items", r"unassign \d+ items", "queue page", r"review page \(conversation\)",
               "release automatic", "claim-next conversation"):
        assert any(re.fullmatch(op, row) for row in rows), (op, rows)
    met = re.search(r"every page and action ≤ 200 ms p95: (\d+)/(\d+) met", out)
    judged = [r for r in rows if r != "release automatic" and "(worker)" not in r]  # those have their own floors
    assert met and int(met.group(2)) == len(judged), out


@pytest.mark.slow
def test_the_export_bench_streams_every_path_from_a_database():
    out = _bench("bench/export.py", "--db", "2000")
    for path in ("HF tests.jsonl (slim rows)", "JSONL download (whole rows)", "CSV download (whole rows)"):
        assert re.search(re.escape(path) + r"\s+2,000 rows", out), out


def test_workers_started_before_one_that_fails_are_stopped():
    # A bench worker left running polls its broker folder for good (six were found slowing later runs).
    sys.path.insert(0, str(REPO))
    from bench.generation_common import start_workers

    stopped: list[int] = []

    class Started:
        def __init__(self, i):
            self.i = i

        def stop(self):
            stopped.append(self.i)

    def make(i):
        if i == 2:
            raise SystemExit("the worker did not start")
        return Started(i)

    with pytest.raises(SystemExit):
        start_workers(3, make)
    assert stopped == [0, 1]
    assert [w.i for w in start_workers(2, Started)] == [0, 1] and stopped == [0, 1]

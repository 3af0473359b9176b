"""Standalone runner benchmark (issue #18).

    .venv/bin/python bench/runner.py                       # 1,420 tests, 0.2 s latency, concurrency 8
    .venv/bin/python bench/runner.py --tests 1420 --latency 0.2 --concurrency 8 --repeat 3

A portable release file of N synthetic tests (ALMITA's size by default) is written to a temporary
folder; a simulated HTTP agent runs in its own process (a threaded almita-agent/1 server that
answers every request after a fixed latency: the expected action for two tests in three, a wrong
one otherwise). Then `python -m evaluation.runner FILE --agent-url URL --concurrency C --json OUT`
runs as a separate process, exactly as in CI, and we measure:

1. start-up: from launching the runner process to the first request the agent receives
   (interpreter start, imports, reading and checking the file, first request). Target < 1 s.
2. wall time of the whole process (start-up, N requests, judging, the report with 1,000
   bootstrap samples, the JSON file) against the ideal N × latency / C. Target ≤ 1.15 × ideal.

No Django, no database: the runner process gets no DJANGO_SETTINGS_MODULE.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

APIS = [{"name": f"api_{i}", "desc": f"Operation {i}", "params": [{"name": "order_id", "type": "int", "required": True}],
         "output": {"name": "result", "type": "dict"}} for i in range(6)]


def build_rows(n: int, seed: int = 5) -> list[dict]:
    """N tests over conversations of 3–7 tests, half replies and half API calls."""
    rng = random.Random(seed)
    rows, conv, test_id = [], 0, 0
    while len(rows) < n:
        conv += 1
        context: list[dict] = []
        for pos in range(rng.randint(3, 7)):
            if len(rows) >= n:
                break
            test_id += 1
            context.append({"role": "user", "content": f"Customer message {pos} of conversation {conv}, order {test_id}."})
            if rng.random() < 0.5:
                expected = {"type": "reply", "content": f"Could you confirm the order number {test_id}, please?"}
            else:
                expected = {"type": "api_call", "name": rng.choice(APIS)["name"], "parameters": {"order_id": test_id}}
            rows.append({"test_id": test_id, "conversation_id": conv, "position": 2 * pos + 1,
                         "procedure": {"id": 1, "title": "Orders", "text": "Ask for the order, look it up, answer."},
                         "apis": APIS, "context": list(context), "expected": expected, "noise_kinds": []})
            if expected["type"] == "reply":
                context.append({"role": "assistant", "content": expected["content"]})
            else:
                context.append({"role": "api", "content": f"{expected['name']}(order_id={test_id})"})
                context.append({"role": "api_output", "content": json.dumps({"result": {"ok": True}})})
    return rows


def write_release(path: Path, rows: list[dict]) -> None:
    header = {"almita_release": {"format": "almita-release/1", "name": "bench", "version": 1, "tests": len(rows)}}
    with path.open("w", encoding="utf-8") as fh:
        for row in [header, *rows]:
            fh.write(json.dumps(row) + "\n")


def serve(port_q, first_q, expected: dict[int, dict], latency: float) -> None:
    """The simulated agent (its own process)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    import threading

    first = threading.Event()

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            if not first.is_set():
                first.set()
                first_q.put(time.time())
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            t = int(body["ids"]["test"])
            exp = expected[t]
            if t % 3 == 0:
                answer = {"role": "assistant", "content": "Sorry, I do not know."}
            elif exp["type"] == "reply":
                answer = {"type": "reply", "content": exp["content"]}
            else:
                answer = {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {
                    "name": exp["name"], "arguments": json.dumps(exp["parameters"])}}]}
            time.sleep(latency)
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), H)
    server.daemon_threads = True
    server.request_queue_size = 64
    port_q.put(server.server_address[1])
    server.serve_forever()


def one_run(release: Path, url: str, concurrency: int, out: Path, first_q) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    started = time.time()
    proc = subprocess.run([sys.executable, "-m", "evaluation.runner", str(release), "--agent-url", url,
                           "--concurrency", str(concurrency), "--json", str(out), "--quiet"],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.time() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"runner failed ({proc.returncode}): {proc.stderr}")
    first = first_q.get(timeout=5)
    doc = json.loads(out.read_text())
    return {"wall": wall, "startup": first - started, "evaluated": doc["evaluated"],
            "test_correct": doc["metrics"]["test_correct"]["value"], "runner_elapsed": doc["elapsed_s"]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tests", type=int, default=1420)
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--repeat", type=int, default=1)
    args = p.parse_args()
    rows = build_rows(args.tests)
    ideal = args.tests * args.latency / args.concurrency
    with tempfile.TemporaryDirectory() as tmp:
        release = Path(tmp) / "bench.almita.jsonl"
        write_release(release, rows)
        ctx = mp.get_context("spawn")
        port_q, first_q = ctx.Queue(), ctx.Queue()
        results = []
        for i in range(args.repeat):
            server = ctx.Process(target=serve, args=(port_q, first_q, {r["test_id"]: r["expected"] for r in rows},
                                                     args.latency), daemon=True)
            server.start()
            url = f"http://127.0.0.1:{port_q.get(timeout=30)}/"
            try:
                results.append(one_run(release, url, args.concurrency, Path(tmp) / f"out{i}.json", first_q))
            finally:
                server.terminate()
                server.join(5)
    load = os.getloadavg()
    print(f"standalone runner: {args.tests} tests, simulated HTTP agent latency {args.latency} s, "
          f"concurrency {args.concurrency}; ideal {ideal:.2f} s; load average {load[0]:.1f} on {os.cpu_count()} cores "
          "(shared machine)")
    for r in results:
        print(f"  wall {r['wall']:.2f} s = {r['wall'] / ideal:.3f} x ideal (target <= 1.15); "
              f"requests+judging+report inside the runner {r['runner_elapsed']:.2f} s; "
              f"start-up to first request {r['startup']:.3f} s (target < 1); "
              f"{r['evaluated']} evaluated, test correctness {100 * r['test_correct']:.1f}%")


if __name__ == "__main__":
    main()

"""How long the standalone runner takes to give up on a broken agent (issue #27).

    .venv/bin/python bench/runner_down.py            # 62 tests, default options
    .venv/bin/python bench/runner_down.py --tests 62 --repeat 3

`python -m evaluation.runner FILE --agent-url URL` runs as a separate process, exactly as in CI,
with its default options (20 s timeout, 1 retry, concurrency 8, the circuit breaker after 5
outages), against three broken agents:

1. **dead port**: nothing listens (connection refused);
2. **hung**: a server that accepts the request and never answers (each request times out);
3. **HTTP 500**: a server that answers 500 at once (retried once, then an outage).

For each we print the wall time, the exit status (must be 3) and how many requests reached the
agent; the hung agent is also run with the breaker off (`--breaker 0`) to show what it saves.
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.runner import build_rows, write_release  # noqa: E402


class Agent:
    """A broken almita-agent/1 server in a thread: 'hung' (sleeps `hang` s) or '500'."""

    def __init__(self, mode: str, hang: float = 120.0) -> None:
        self.requests = 0
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.requests += 1
                if mode == "hung":
                    time.sleep(hang)
                    return
                body = b'{"error": "boom"}'
                try:
                    self.send_response(500)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/agent"


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/agent"


def run(release: Path, url: str, *extra: str) -> tuple[float, int]:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "evaluation.runner", str(release), "--agent-url", url, "--quiet",
                           *extra], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    return time.monotonic() - started, proc.returncode


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tests", type=int, default=62)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--no-breaker-too", action="store_true",
                   help="also run the hung agent without the breaker (takes minutes)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        release = Path(tmp) / "release.jsonl"
        write_release(release, build_rows(args.tests))
        cases = [("dead port", None, ()), ("hung", "hung", ()), ("HTTP 500", "500", ())]
        if args.no_breaker_too:
            cases.append(("hung, --breaker 0", "hung", ("--breaker", "0")))
        print(f"{args.tests} tests, runner defaults (timeout 20 s, 1 retry, concurrency 8, breaker 5)")
        for name, mode, extra in cases:
            for _ in range(args.repeat):
                agent = Agent(mode) if mode else None
                seconds, rc = run(release, agent.url if agent else dead_url(), *extra)
                asked = agent.requests if agent else 0
                print(f"  {name:<20} exit {rc}  {seconds:6.1f} s  requests received {asked}")


if __name__ == "__main__":
    main()

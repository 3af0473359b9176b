"""Real local HTTP agents for the runner and HTTP-agent tests: a threaded server on 127.0.0.1
that answers each almita-agent/1 request with `handler(body) -> (status, body bytes, delay)`."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

from tests.evaluation.conftest import APIS, PROCEDURE, SCRIPT, TESTS, context_for, which_test
from tests.fake_openai import Reply


class AgentServer:
    def __init__(self, handler: Callable[[dict], tuple[int, bytes, float]]) -> None:
        self.handler = handler
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with outer.lock:
                    outer.requests.append(body)
                    outer.headers.append(dict(self.headers))
                    outer.in_flight += 1
                    outer.peak = max(outer.peak, outer.in_flight)
                try:
                    status, data, delay = outer.handler(body)
                    if delay:
                        time.sleep(delay)
                finally:
                    with outer.lock:
                        outer.in_flight -= 1
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/agent"

    def __enter__(self) -> "AgentServer":
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def ok(obj) -> tuple[int, bytes, float]:
    return 200, json.dumps(obj).encode(), 0.0


def tool_call(name: str, args: dict) -> dict:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}


# The HTTP agent's answers, one per test of conftest.TESTS, in every accepted response shape; the
# outcomes are the same as conftest.SCRIPT's, so the metrics are conftest.EXPECTED.
HTTP_SCRIPT: dict[int, tuple[int, bytes, float]] = {
    1: ok({"type": "reply", "content": "Can you give me your order ID?"}),
    2: ok(tool_call("get_order_details", {"order_id": 812})),
    3: ok({"type": "api_call", "name": "refund_order", "parameters": {"order_id": 812}}),
    4: ok({"role": "assistant", "content": "What is your order number?"}),
    5: ok({"choices": [{"message": tool_call("refund_order", {"order_id": 900, "reason": "  Damaged "})}]}),
    6: ok({"role": "assistant", "content": "The weather is nice today."}),
    7: (200, b"I think I should greet the customer first.", 0.0),  # not JSON: wrong, with the reason
    8: ok(tool_call("cancel_order", {"order_id": 56})),
    9: ok({"type": "api_call", "name": "cancel_order", "parameters": {"order_id": 55}}),
    10: ok({"role": "assistant", "content": "Goodbye!"}),
}


def scripted_http(body: dict) -> tuple[int, bytes, float]:
    return HTTP_SCRIPT[int(body["ids"]["test"])]


def release_rows(tests=TESTS) -> list[dict]:
    return [{"test_id": t, "conversation_id": c, "position": p, "intent": "late order", "procedure": PROCEDURE,
             "apis": APIS, "context": context_for(t, c, p), "expected": e, "noise_kinds": n}
            for t, c, p, e, n in tests]


def write_release_file(path: Path, rows: list[dict] | None = None, name: str = "hand-made") -> Path:
    rows = release_rows() if rows is None else rows
    header = {"almita_release": {"format": "almita-release/1", "name": name, "version": 1, "tests": len(rows)}}
    path.write_text("\n".join(json.dumps(r) for r in [header, *rows]) + "\n", encoding="utf-8")
    return path


def function_calling_agent(body: dict, n: int) -> Reply:
    """A model behind the fake OpenAI server answering with native tool calls; the same outcomes
    as conftest.SCRIPT except test 7, a call to a tool that was not offered (also wrong)."""
    t = which_test(body)
    if t == 7:
        return Reply(content=None, tool_calls=[{"name": "greet", "arguments": "{}"}])
    if t == 8:
        return Reply(tool_calls=[{"name": "cancel_order", "arguments": '{"order_id": 56}'}])
    action = json.loads(SCRIPT[t].strip("`json\n"))
    if action["type"] == "reply":
        return Reply(content=action["parameters"]["content"])
    return Reply(tool_calls=[{"name": action["type"], "arguments": json.dumps(action["parameters"])}])

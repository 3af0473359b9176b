"""A real local HTTP server speaking the OpenAI Chat Completions protocol, for tests and benches.

Never a mock of the client object: the official `openai` client talks to this server over TCP on
127.0.0.1 exactly as it would talk to OpenAI, vLLM or Ollama.

    with FakeOpenAI() as fake:
        fake.set_handler(lambda body, n: Reply(content="hello"))
        client = OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0)

`handler(body, n)` receives the parsed JSON request and the 0-based number of the request among
all requests the server received; it returns a `Reply`. Faults are Replies too
(`Reply.rate_limited()`, `Reply.server_error()`, `Reply.slow(s)`, `Reply.truncated()`), and
`scripted([...])` / `by_stage({...})` / `with_faults(...)` compose handlers (all in
tests/fake_replies.py, re-exported here).

The simulation mode (`latency=`, `max_concurrency=`) makes every request take a fixed time and
serves at most C requests at once (the others wait for a slot), like a rate-limited endpoint;
benches use it to compare wall time with the ideal N×latency/C. `rate_limit=RateLimit(R)`
(tests/fake_ratelimit.py) allows R requests a minute and answers 429 with OpenAI's headers beyond.
"""
from __future__ import annotations

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from urllib.parse import parse_qs, urlsplit

import pytest

from tests.fake_batches import BatchStore
from tests.fake_schema import requested_schema, text_conforms

from tests.fake_replies import (  # noqa: F401 - re-exported: tests import them from here
    Handler,
    Reply,
    _default_handler,
    by_stage,
    echo_authorization,
    fail_then_repair,
    first_question,
    is_repair_turn,
    never_passing,
    prompt_text,
    scripted,
    with_faults,
)

__all__ = ["Reply", "FakeOpenAI", "scripted", "by_stage", "with_faults", "fail_then_repair", "never_passing",
           "echo_authorization", "is_repair_turn", "first_question", "fake_openai", "point_settings_at"]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: "FakeOpenAI"


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, the body waits ~40 ms for the
    # client's delayed ACK on every keep-alive request.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - keep test output quiet
        pass

    def _send(self, status: int, body: str, headers: dict | None = None) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _refused(self) -> str | None:
        """Why an Azure-style fake refuses this request (no api-version, no api-key header), if it does."""
        fake = self.server.fake
        parts = urlsplit(self.path)
        if not fake.azure:
            return None
        if not parts.path.startswith("/openai/"):
            return "404 Resource not found (Azure paths start with /openai/)"
        if not parse_qs(parts.query).get("api-version"):
            return "404 Resource not found (missing api-version)"
        if not self.headers.get("api-key"):
            return "401 Access denied due to missing api-key header"
        return None

    def do_GET(self) -> None:  # noqa: N802
        path = urlsplit(self.path).path.rstrip("/")
        refused = self._refused()
        if refused:
            self._send(int(refused[:3]), json.dumps({"error": {"message": refused[4:]}}))
        elif path.endswith("/models"):
            self._send(200, json.dumps({"object": "list", "data": [{"id": "fake-model", "object": "model"}]}))
        elif "/batches" in path or "/files" in path:
            if not self.server.fake.batches_enabled:
                self._send(404, json.dumps({"error": {"message": "not found"}}))
                return
            status, body = self.server.fake.batch_store.get(path)
            if isinstance(body, bytes):
                self._send_bytes(status, body)
            else:
                self._send(status, json.dumps(body))
        else:
            self._send(404, json.dumps({"error": {"message": "not found"}}))

    def _send_bytes(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = urlsplit(self.path).path.rstrip("/")
        refused = self._refused()
        if refused:
            self._send(int(refused[:3]), json.dumps({"error": {"message": refused[4:]}}))
            return
        if path.endswith("/files") or path.endswith("/batches"):
            if not self.server.fake.batches_enabled:
                self._send(404, json.dumps({"error": {"message": f"unknown path {path}"}}))
                return
            status, body = self.server.fake.batch_store.post(path, self.headers, raw)
            self._send(status, json.dumps(body))
            return
        if not path.endswith("/chat/completions"):
            self._send(404, json.dumps({"error": {"message": f"unknown path {self.path}"}}))
            return
        if self.server.fake.azure:
            self.server.fake.deployments.append(path.split("/deployments/")[-1].split("/")[0])
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, json.dumps({"error": {"message": "request body is not JSON"}}))
            return
        self.server.fake._serve(self, body)


class FakeOpenAI:
    """Context manager: a started server on 127.0.0.1 with a random port."""

    def __init__(self, handler: Handler | None = None, *, latency: float = 0.0,
                 max_concurrency: int | None = None, model: str | None = None, rate_limit=None,
                 structured_outputs: str = "accept", azure: bool = False, batches: bool = True,
                 batch_script=None) -> None:
        """`structured_outputs`: what a json_schema response_format meets — "accept" (taken, the
        handler answers as it will), "honour" (the reply always conforms: a handler reply that
        does not is drawn again, up to 8 times, as constrained decoding would never emit it) or
        "refuse" (HTTP 400 naming response_format, like servers without structured outputs).
        `azure`: speak Azure OpenAI (paths under /openai/deployments/<name>/, `api-version`
        required, the key in an `api-key` header). `batches`: serve /files and /batches
        (tests/fake_batches.py; `batch_script` scripts failing and expiring lines)."""
        self._handler: Handler = handler or _default_handler
        if structured_outputs not in ("accept", "honour", "refuse"):
            raise ValueError(f"structured_outputs {structured_outputs!r}")
        self.structured_outputs = structured_outputs
        self.azure = azure
        self.deployments: list[str] = []
        self.batches_enabled = batches
        self.batch_store = BatchStore(self)
        self.batch_store.script = batch_script
        self.rate_limit = rate_limit
        self.latency = latency
        self.max_concurrency = max_concurrency
        self._slots = threading.BoundedSemaphore(max_concurrency) if max_concurrency else None
        self.model = model
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.replies: list[Reply] = []
        self._lock = threading.Lock()
        self._counter = itertools.count()
        self.in_flight = 0
        self.peak_in_flight = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> "FakeOpenAI":
        self._server = _Server(("127.0.0.1", 0), _RequestHandler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeOpenAI":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting ---------------------------------------------------------------------------
    def set_handler(self, fn: Handler) -> None:
        self._handler = fn

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.headers.clear()
            self.replies.clear()

    @property
    def request_count(self) -> int:
        return len(self.requests)

    # -- serving -----------------------------------------------------------------------------
    def _serve(self, http: _RequestHandler, body: dict) -> None:
        with self._lock:
            n = next(self._counter)
            self.requests.append(body)
            self.headers.append(dict(http.headers.items()))
        limit_headers = self.rate_limit.admit() if self.rate_limit else {}
        if limit_headers is None:  # over the simulated rate limit: 429 at once, like a gateway
            refused = self.rate_limit.refused()
            with self._lock:
                self.replies.append(refused)
            http._send(refused.status, refused.raw_body, refused.headers)
            return
        if self._slots:
            self._slots.acquire()
        try:
            with self._lock:
                self.in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            reply = self._reply(body, n)
            with self._lock:
                self.replies.append(reply)
            wait = self.latency + reply.delay
            if wait:
                time.sleep(wait)
        finally:
            with self._lock:
                self.in_flight -= 1
            if self._slots:
                self._slots.release()
        headers = {**limit_headers, **reply.headers}
        if reply.raw_body is not None:
            http._send(reply.status, reply.raw_body, headers)
            return
        if reply.status != 200:
            http._send(reply.status, json.dumps({"error": {"message": f"fake status {reply.status}"}}), headers)
            return
        http._send(200, json.dumps(self._completion(body, reply, n)), headers)

    def _reply(self, body: dict, n: int) -> Reply:
        schema = requested_schema(body)
        if schema is not None and self.structured_outputs == "refuse":
            return Reply.client_error(400, "Invalid parameter: 'response_format' of type 'json_schema' is not "
                                           "supported with this model (fake)")
        for _ in range(8 if schema is not None and self.structured_outputs == "honour" else 1):
            try:
                reply = self._handler(body, n)
            except Exception as exc:  # a broken test handler shows up as a 500 with the reason
                reply = Reply.server_error(500)
                reply.raw_body = json.dumps({"error": {"message": f"fake handler raised {exc!r}"}})
            if schema is None or self.structured_outputs != "honour" or reply.status != 200 or \
                    (reply.raw_body is None and text_conforms(reply.content, schema)):
                break
        return reply

    def _answer(self, body: dict) -> tuple[int, dict]:
        """A batch line: (status, body) as the online endpoint would answer it (no latency, no rate limit)."""
        with self._lock:
            n = next(self._counter)
        reply = self._reply(body, n)
        if reply.status != 200 or reply.raw_body is not None:
            status = reply.status if reply.status != 200 else 500
            return status, {"error": {"message": f"fake status {status}", "type": "server_error"}}
        return 200, self._completion(body, reply, n)

    def _completion(self, body: dict, reply: Reply, n: int) -> dict:
        message: dict = {"role": "assistant", "content": reply.content}
        finish = reply.finish_reason
        if reply.tool_calls:
            calls = []
            for i, call in enumerate(reply.tool_calls):
                if "function" in call:
                    calls.append(call)
                    continue
                args = call.get("arguments", {})
                calls.append({
                    "id": call.get("id", f"call_{n}_{i}"),
                    "type": "function",
                    "function": {"name": call["name"],
                                 "arguments": args if isinstance(args, str) else json.dumps(args)},
                })
            message["tool_calls"] = calls
            finish = "tool_calls"
        return {
            "id": f"chatcmpl-fake-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model or body.get("model", "fake-model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            },
        }


@pytest.fixture
def fake_openai():
    """A started FakeOpenAI server; script it with `fake_openai.set_handler(...)`."""
    with FakeOpenAI() as server:
        yield server


def point_settings_at(settings, fake: FakeOpenAI, api_key: str = "sk-fake-test-key", **extra) -> dict[str, str]:
    """Point Django settings (pytest-django `settings` fixture) at `fake`.

    Returns the matching environment for a worker subprocess
    (`celery_worker_factory(extra_env=point_settings_at(settings, fake))`). `extra` overrides
    further settings, e.g. LLM_BACKOFF_BASE=0.01; they go to both.
    """
    values = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": api_key, "LLM_BACKOFF_BASE": 0.01, **extra}
    env: dict[str, str] = {}
    for name, value in values.items():
        setattr(settings, name, value)
        env[name] = value if isinstance(value, str) else (str(value).lower() if isinstance(value, bool) else str(value))
    return env


@pytest.fixture
def openai_settings(settings, fake_openai) -> dict[str, str]:
    """Settings pointed at the started fake server; yields the env dict for worker subprocesses."""
    return point_settings_at(settings, fake_openai)

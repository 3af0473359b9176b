"""A real local HTTP server speaking the OpenAI Chat Completions protocol, for tests and benches.

Never a mock of the client object: the official `openai` client talks to this server over TCP on
127.0.0.1 exactly as it would talk to OpenAI, vLLM or Ollama.

    with FakeOpenAI() as fake:
        fake.set_handler(lambda body, n: Reply(content="hello"))
        client = OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0)

`handler(body, n)` receives the parsed JSON request and the 0-based number of the request among
all requests the server received; it returns a `Reply`. Faults are Replies too
(`Reply.rate_limited()`, `Reply.server_error()`, `Reply.slow(s)`, `Reply.truncated()`), and
`scripted([...])` / `by_stage({...})` / `with_faults(...)` compose handlers.

The simulation mode (`latency=`, `max_concurrency=`) makes every request take a fixed time and
serves at most C requests at once (the others wait for a slot), like a rate-limited endpoint;
benches use it to compare wall time with the ideal N×latency/C.
"""
from __future__ import annotations

import itertools
import json
import random
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterable

import pytest

__all__ = ["Reply", "FakeOpenAI", "scripted", "by_stage", "with_faults", "fail_then_repair", "never_passing",
           "echo_authorization", "is_repair_turn", "first_question", "fake_openai", "point_settings_at"]


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list | None = None  # [{"name": str, "arguments": str|dict}] or full OpenAI dicts
    status: int = 200
    headers: dict = field(default_factory=dict)
    delay: float = 0.0
    raw_body: str | None = None  # sent verbatim instead of a JSON completion (garbage, truncation)
    prompt_tokens: int = 10
    completion_tokens: int = 5
    finish_reason: str = "stop"

    @classmethod
    def json(cls, obj, **kw) -> "Reply":
        return cls(content=json.dumps(obj), **kw)

    @classmethod
    def rate_limited(cls, retry_after: float = 0.1) -> "Reply":
        return cls(status=429, headers={"retry-after": str(retry_after)},
                   raw_body=json.dumps({"error": {"message": "Rate limit reached (fake)", "type": "rate_limit",
                                                  "code": "rate_limit_exceeded"}}))

    @classmethod
    def server_error(cls, status: int = 500) -> "Reply":
        return cls(status=status, raw_body=json.dumps({"error": {"message": "Internal error (fake)",
                                                                 "type": "server_error"}}))

    @classmethod
    def client_error(cls, status: int = 400, message: str = "Bad request (fake)") -> "Reply":
        return cls(status=status, raw_body=json.dumps({"error": {"message": message, "type": "invalid_request"}}))

    @classmethod
    def slow(cls, seconds: float, content: str = "too late") -> "Reply":
        return cls(content=content, delay=seconds)

    @classmethod
    def truncated(cls) -> "Reply":
        """A 200 whose body is cut off in the middle of the JSON."""
        return cls(raw_body='{"id": "chatcmpl-x", "object": "chat.completion", "choices": [{"index": 0, "mess')

    @classmethod
    def wrong_shape(cls) -> "Reply":
        """A 200 whose content is valid JSON of the wrong shape for any stage."""
        return cls(content=json.dumps({"answer": 42, "note": "not what was asked"}))

    @classmethod
    def truncated_json(cls, text: str = '{"messages": [{"role": "user", "content": "Hel') -> "Reply":
        """A 200 whose content is JSON cut off mid-way (max_tokens reached)."""
        return cls(content=text, finish_reason="length")

    @property
    def is_fault(self) -> bool:
        return self.status != 200 or self.raw_body is not None


Handler = Callable[[dict, int], Reply]


def _default_handler(body: dict, n: int) -> Reply:
    return Reply(content="ok")


def scripted(replies: Iterable[Reply | str], then: Handler | None = None) -> Handler:
    """Answer with `replies` in order (strings become contents), then with `then` (or repeat the last)."""
    items = [r if isinstance(r, Reply) else Reply(content=r) for r in replies]
    lock = threading.Lock()
    position = itertools.count()

    def handler(body: dict, n: int) -> Reply:
        with lock:
            i = next(position)
        if i < len(items):
            return items[i]
        if then is not None:
            return then(body, n)
        return items[-1]

    return handler


def prompt_text(body: dict) -> str:
    return "\n".join(str(m.get("content") or "") for m in body.get("messages", []))


def by_stage(routes: dict[str, Handler | Reply | str], default: Handler | None = None) -> Handler:
    """Route on a marker found in the prompt text (first matching marker wins)."""

    def handler(body: dict, n: int) -> Reply:
        text = prompt_text(body)
        for marker, target in routes.items():
            if marker in text:
                if callable(target):
                    return target(body, n)
                return target if isinstance(target, Reply) else Reply(content=target)
        if default is not None:
            return default(body, n)
        return Reply.client_error(404, "no scripted reply for this prompt")

    return handler


def with_faults(inner: Handler, rate: float, seed: int = 0, faults: list[Reply] | None = None,
                max_consecutive: int = 2, per_prompt: bool = False) -> Handler:
    """Inject transient faults into `rate` of requests, at most `max_consecutive` per prompt in a row.

    Faults are only transient ones (429, 5xx, truncated body) unless `faults` says otherwise, so a
    client with retries >= max_consecutive loses nothing. With `per_prompt`, the streak is counted per
    first question, across its repair turns too (for faults in the content: wrong shape, truncated JSON).
    """
    rng = random.Random(seed)
    lock = threading.Lock()
    streak: dict[str, int] = {}
    pool = faults or [Reply.rate_limited(0.01), Reply.server_error(500), Reply.server_error(503), Reply.truncated()]

    def handler(body: dict, n: int) -> Reply:
        key = json.dumps((first_question(body) if per_prompt else body).get("messages"), sort_keys=True)
        with lock:
            inject = rng.random() < rate and streak.get(key, 0) < max_consecutive
            fault = rng.choice(pool)
            streak[key] = streak.get(key, 0) + 1 if inject else 0
        return fault if inject else inner(body, n)

    return handler


def is_repair_turn(body: dict) -> bool:
    """True when the request is a repair turn (the app re-asks with the validators' findings)."""
    messages = body.get("messages") or []
    return len(messages) >= 2 and messages[-2].get("role") == "assistant"


def first_question(body: dict) -> dict:
    """The request as it was before any repair turn (for handlers that answer by prompt content)."""
    messages = list(body.get("messages") or [])
    while len(messages) >= 2 and messages[-2].get("role") == "assistant":
        messages = messages[:-2]
    return {**body, "messages": messages}


def fail_then_repair(inner: Handler, bad: Callable[[dict], Reply], times: int = 1,
                     when: Callable[[dict], bool] = lambda body: True) -> Handler:
    """Answer a prompt (chosen by `when`) with `bad(body)` on its first question and on its first
    `times - 1` repair turns, then with `inner` on the question without the repair turns: a reply that
    fails validation and passes once repaired."""

    def handler(body: dict, n: int) -> Reply:
        original = first_question(body)
        if not when(original):
            return inner(original, n)
        turns = (len(body.get("messages") or []) - len(original["messages"])) // 2
        return bad(original) if turns < times else inner(original, n)

    return handler


def never_passing(bad: Callable[[dict], Reply], inner: Handler, when: Callable[[dict], bool]) -> Handler:
    """Replies that never pass for prompts chosen by `when`, however often they are repaired."""

    def handler(body: dict, n: int) -> Reply:
        original = first_question(body)
        return bad(original) if when(original) else inner(original, n)

    return handler


def echo_authorization(fake: "FakeOpenAI") -> Handler:
    """An endpoint (or gateway) that refuses the request and echoes the Authorization header it got."""

    def handler(body: dict, n: int) -> Reply:
        auth = fake.headers[n].get("Authorization") or fake.headers[n].get("authorization") or ""
        return Reply.client_error(401, f"Invalid credentials: received 'Authorization: {auth}' "
                                       f"(api-key: {auth.split()[-1] if auth else ''})")

    return handler


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

    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, json.dumps({"object": "list", "data": [{"id": "fake-model", "object": "model"}]}))
        else:
            self._send(404, json.dumps({"error": {"message": "not found"}}))

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, json.dumps({"error": {"message": f"unknown path {self.path}"}}))
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, json.dumps({"error": {"message": "request body is not JSON"}}))
            return
        self.server.fake._serve(self, body)


class FakeOpenAI:
    """Context manager: a started server on 127.0.0.1 with a random port."""

    def __init__(self, handler: Handler | None = None, *, latency: float = 0.0,
                 max_concurrency: int | None = None, model: str | None = None) -> None:
        self._handler: Handler = handler or _default_handler
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
        if self._slots:
            self._slots.acquire()
        try:
            with self._lock:
                self.in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            try:
                reply = self._handler(body, n)
            except Exception as exc:  # a broken test handler shows up as a 500 with the reason
                reply = Reply.server_error(500)
                reply.raw_body = json.dumps({"error": {"message": f"fake handler raised {exc!r}"}})
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
        if reply.raw_body is not None:
            http._send(reply.status, reply.raw_body, reply.headers)
            return
        if reply.status != 200:
            http._send(reply.status, json.dumps({"error": {"message": f"fake status {reply.status}"}}), reply.headers)
            return
        http._send(200, json.dumps(self._completion(body, reply, n)), reply.headers)

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

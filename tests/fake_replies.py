"""Replies and handlers for the fake OpenAI server (tests/fake_openai.py): what it answers.

`handler(body, n)` receives the parsed JSON request and the 0-based number of the request among
all requests the server received; it returns a `Reply`. Faults are Replies too
(`Reply.rate_limited()`, `Reply.server_error()`, `Reply.slow(s)`, `Reply.truncated()`), and
`scripted([...])` / `by_stage({...})` / `with_faults(...)` / `fail_then_repair(...)` compose handlers.
"""
from __future__ import annotations

import itertools
import json
import random
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable

if TYPE_CHECKING:
    from tests.fake_openai import FakeOpenAI


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

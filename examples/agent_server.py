"""An agent behind the almita-agent/1 HTTP protocol (docs/agent-protocol.md), standard library only.

It wraps any OpenAI-compatible chat model with its own instructions: each POSTed test becomes one
chat completion (its instructions + the procedure as the system message, the conversation so far,
the tools), and the model's assistant message is sent back as it is.

    OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_API_KEY=... MODEL=llama3.1 \
        python examples/agent_server.py --port 8808
    python -m evaluation.runner release.jsonl --agent-url http://127.0.0.1:8808/

Optional: AGENT_TOKEN=... makes the server require `Authorization: Bearer <AGENT_TOKEN>`;
INSTRUCTIONS_FILE=... replaces the built-in instructions.
"""
from __future__ import annotations

import argparse
import json
import os
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

INSTRUCTIONS = """You are the support assistant of our shop. Follow the procedure below exactly. \
Call a tool only when you have all of its required parameters from the conversation; otherwise ask \
the customer. Keep replies short and polite."""


def instructions() -> str:
    path = os.environ.get("INSTRUCTIONS_FILE")
    return open(path, encoding="utf-8").read() if path else INSTRUCTIONS


def complete(test: dict) -> dict:
    """One chat completion for one test; returns the model's assistant message."""
    system = instructions()
    knowledge = test.get("knowledge") or {}
    if knowledge.get("text"):
        system += f"\n\n<procedure format=\"{knowledge.get('format')}\">\n{knowledge['text']}\n</procedure>"
    body = {"model": os.environ.get("MODEL", "gpt-4o-mini"), "temperature": 0,
            "messages": [{"role": "system", "content": system}] + test["messages"]}
    if test.get("tools"):
        body["tools"] = test["tools"]
    base = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1").rstrip("/")
    req = urllib.request.Request(base + "/chat/completions", data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json",
                                          "Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}"})
    with urllib.request.urlopen(req, timeout=float(os.environ.get("MODEL_TIMEOUT", "60"))) as resp:
        message = json.load(resp)["choices"][0]["message"]
    return {k: message[k] for k in ("role", "content", "tool_calls") if message.get(k) is not None}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt: str, *args) -> None:  # one line per request on stderr, no bodies
        if os.environ.get("AGENT_VERBOSE"):
            super().log_message(fmt, *args)

    def reply(self, status: int, obj: dict) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        token = os.environ.get("AGENT_TOKEN")
        if token and self.headers.get("Authorization") != f"Bearer {token}":
            return self.reply(401, {"error": "missing or wrong bearer token"})
        try:
            test = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            message = complete(test)
        except (ValueError, KeyError, TypeError) as exc:
            return self.reply(400, {"error": f"bad request: {exc}"})
        except urllib.error.HTTPError as exc:  # pass the model's 429/5xx on: the caller retries
            return self.reply(exc.code, {"error": f"model endpoint: HTTP {exc.code}"})
        except OSError as exc:
            return self.reply(502, {"error": f"model endpoint unreachable: {exc}"})
        self.reply(200, message)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8808)
    args = p.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    print(f"agent listening on http://{args.host}:{server.server_address[1]}/", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

"""A real webhook receiver on 127.0.0.1 that checks every request the way docs/agent-protocol.md
tells receivers to: signature over timestamp + "." + body, timestamp within five minutes, and
delivery ids seen before rejected as replays."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from webhooks import crypto


class Receiver:
    def __init__(self, secret: str = "", statuses: list[int] | None = None) -> None:
        self.secret = secret
        self.statuses = list(statuses or [])  # answered in order, then 200
        self.received: list[dict] = []  # every request: headers, body, verdict
        self.seen: set[str] = set()
        self.lock = threading.Lock()
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = dict(self.headers)
                with outer.lock:
                    valid = crypto.verify(outer.secret, headers.get(crypto.TIMESTAMP_HEADER), body,
                                          headers.get(crypto.SIGNATURE_HEADER), now=time.time())
                    delivery = headers.get(crypto.DELIVERY_HEADER, "")
                    status = outer.statuses.pop(0) if outer.statuses else 200
                    replay = status == 200 and delivery in outer.seen
                    if status == 200 and valid and not replay:
                        outer.seen.add(delivery)
                    outer.received.append({"headers": headers, "body": body, "valid": valid, "replay": replay,
                                           "status": status})
                code = status if valid and not replay else 401
                data = json.dumps({"ok": code == 200}).encode()
                self.send_response(code)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def __enter__(self) -> "Receiver":
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def events(self) -> list[dict]:
        return [json.loads(r["body"]) for r in self.received if r["valid"]]

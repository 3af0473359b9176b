"""The Batch API of the fake OpenAI server (tests/fake_openai.py): `/files` and `/batches`.

Uploaded JSONL is kept in memory. A batch advances one step each time it is retrieved:
validating → in_progress → (its lines answered by the server's handler, exactly as online)
completed, or expired. `batch_script(batch_no, line_no, body)` decides each line's fate, by the
0-based order of batches and of lines within one: None (answered), "error" (a 500 in the error
file), "expire" (the batch expires before it runs this line: the batch ends `expired`, the line
in the error file with code batch_expired). Helpers: `partly_failing(...)`, `expiring(...)`.
"""
from __future__ import annotations

import itertools
import json
import threading
import time
from email.parser import BytesParser
from email.policy import HTTP
from typing import Callable

BatchScript = Callable[[int, int, dict], "str | None"]


def partly_failing(batch_no: int = 0, every: int = 3) -> BatchScript:
    """Batch `batch_no` fails every `every`-th line with a 500 (the others are answered)."""
    return lambda b, i, body: "error" if b == batch_no and i % every == 0 else None


def expiring(batch_no: int, after: int = 1) -> BatchScript:
    """Batch `batch_no` runs its first `after` lines, then its window ends: the rest expire."""
    return lambda b, i, body: "expire" if b == batch_no and i >= after else None


def combine(*scripts: BatchScript) -> BatchScript:
    def script(b: int, i: int, body: dict) -> str | None:
        for s in scripts:
            fate = s(b, i, body)
            if fate:
                return fate
        return None
    return script


def parse_multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """{field: (filename, bytes)} of a multipart/form-data body."""
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    out = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        out[name] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return out


class BatchStore:
    def __init__(self, fake) -> None:
        self.fake = fake
        self.files: dict[str, dict] = {}
        self.contents: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.script: BatchScript | None = None
        self.lines: list[dict] = []  # every batch line answered by the handler (its request body)
        self._ids = itertools.count(1)
        self._batch_no = itertools.count()
        self._lock = threading.Lock()

    def _file(self, data: bytes, purpose: str, filename: str) -> dict:
        fid = f"file-fake{next(self._ids)}"
        obj = {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
               "filename": filename, "purpose": purpose, "status": "processed"}
        self.files[fid] = obj
        self.contents[fid] = data
        return obj

    # -- HTTP -----------------------------------------------------------------------------------
    def post(self, path: str, headers, raw: bytes) -> tuple[int, dict]:
        if path.endswith("/files"):
            fields = parse_multipart(headers.get("Content-Type", ""), raw)
            if "file" not in fields:
                return 400, {"error": {"message": "missing file"}}
            filename, data = fields["file"]
            purpose = fields.get("purpose", (None, b""))[1].decode()
            with self._lock:
                return 200, self._file(data, purpose, filename or "upload.jsonl")
        if path.endswith("/batches"):
            body = json.loads(raw or b"{}")
            fid = body.get("input_file_id")
            if fid not in self.contents:
                return 404, {"error": {"message": f"no file {fid}"}}
            with self._lock:
                bid = f"batch_fake{next(self._ids)}"
                batch = {"id": bid, "object": "batch", "endpoint": body.get("endpoint"), "errors": None,
                         "input_file_id": fid, "completion_window": body.get("completion_window", "24h"),
                         "status": "validating", "output_file_id": None, "error_file_id": None,
                         "created_at": int(time.time()), "request_counts": {"total": 0, "completed": 0, "failed": 0},
                         "_no": next(self._batch_no)}
                self.batches[bid] = batch
            return 200, self.public(batch)
        return 404, {"error": {"message": f"unknown path {path}"}}

    def get(self, path: str) -> tuple[int, dict | bytes]:
        parts = path.strip("/").split("/")
        if parts[-1] == "batches":
            return 200, {"object": "list", "data": [self.public(b) for b in self.batches.values()], "has_more": False}
        if len(parts) >= 2 and parts[-2] == "batches":
            batch = self.batches.get(parts[-1])
            if batch is None:
                return 404, {"error": {"message": "no such batch"}}
            self._advance(batch)
            return 200, self.public(batch)
        if len(parts) >= 3 and parts[-1] == "content" and parts[-3] == "files":
            data = self.contents.get(parts[-2])
            return (200, data) if data is not None else (404, {"error": {"message": "no such file"}})
        return 404, {"error": {"message": f"unknown path {path}"}}

    @staticmethod
    def public(batch: dict) -> dict:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    # -- running a batch --------------------------------------------------------------------------
    def _advance(self, batch: dict) -> None:
        with self._lock:
            if batch["status"] == "validating":
                batch["status"] = "in_progress"
                return
            if batch["status"] != "in_progress":
                return
            batch["status"] = "finalizing"  # one retrieve runs it; others see finalizing meanwhile
        out, errors, expired = [], [], False
        lines = [json.loads(t) for t in self.contents[batch["input_file_id"]].decode().splitlines() if t.strip()]
        for i, line in enumerate(lines):
            fate = self.script(batch["_no"], i, line["body"]) if self.script else None
            rid = f"batch_req_{batch['id']}_{i}"
            if fate == "expire":
                expired = True
                errors.append({"id": rid, "custom_id": line["custom_id"], "response": None,
                               "error": {"code": "batch_expired",
                                         "message": "This request could not be executed before the completion window expired."}})
                continue
            if fate == "error":
                errors.append({"id": rid, "custom_id": line["custom_id"], "error": None, "response": {
                    "status_code": 500, "request_id": rid,
                    "body": {"error": {"message": "Internal error (fake batch line)", "type": "server_error"}}}})
                continue
            status, body = self.fake._answer(line["body"])
            with self._lock:
                self.lines.append(line["body"])
            target = out if status == 200 else errors
            target.append({"id": rid, "custom_id": line["custom_id"], "error": None,
                           "response": {"status_code": status, "request_id": rid, "body": body}})
        with self._lock:
            if out:
                batch["output_file_id"] = self._file("".join(json.dumps(o) + "\n" for o in out).encode(),
                                                     "batch_output", "output.jsonl")["id"]
            if errors:
                batch["error_file_id"] = self._file("".join(json.dumps(e) + "\n" for e in errors).encode(),
                                                    "batch_output", "errors.jsonl")["id"]
            batch["request_counts"] = {"total": len(lines), "completed": len(out), "failed": len(errors)}
            batch["status"] = "expired" if expired else "completed"

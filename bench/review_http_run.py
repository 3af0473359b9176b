"""One run of bench/review_http.py: a throw-away database, the production web server on it, the clients, JSON out.

Runs in a process of its own (Django's settings are per process) with DATABASE_URL set to the
database under test.
"""
from __future__ import annotations

import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode, urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from almita_web.serve import options as server_options  # noqa: E402  (no Django: safe before settings)
PASSWORD = "bench-password-1"
TOKEN = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')
TICK = 1000 / os.sysconf("SC_CLK_TCK")


class Session:
    """One annotator's browser: a keep-alive connection and a cookie jar."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.cookies: dict[str, str] = {}
        self.token = ""

    def request(self, method: str, path: str, form: dict | None = None) -> tuple[int, str, bytes]:
        headers = {"Host": "127.0.0.1", "Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        body = None
        if form is not None:
            body = urlencode({**form, "csrfmiddlewaretoken": self.token}).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        try:
            self.conn.request(method, path, body=body, headers=headers)
            resp = self.conn.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            self.conn.close()  # the server closed an idle connection: open a new one, as a browser does
            self.conn.request(method, path, body=body, headers=headers)
            resp = self.conn.getresponse()
        content = resp.read()
        for raw in resp.headers.get_all("Set-Cookie") or []:
            for name, morsel in SimpleCookie(raw).items():
                if morsel.value and morsel["max-age"] != "0":
                    self.cookies[name] = morsel.value
                else:
                    self.cookies.pop(name, None)
        found = TOKEN.search(content)
        if found:
            self.token = found.group(1).decode()
        return resp.status, resp.getheader("Location", ""), content

    def login(self, username: str) -> None:
        self.request("GET", "/login/")
        status, location, _ = self.request("POST", "/login/", {"username": username, "password": PASSWORD})
        if status != 302:
            raise RuntimeError(f"login of {username} failed: {status}")
        self.token = self.cookies["csrftoken"]  # rotated at login; the cookie holds the new secret


def client(port: int, username: str, stage: str, warmup: int, rounds: int, start: threading.Barrier,
           seen: set, lock: threading.Lock, out: dict) -> None:
    try:
        _client(port, username, stage, warmup, rounds, start, seen, lock, out)
    except BaseException as exc:
        out[username] = {"error": f"{type(exc).__name__}: {exc}"}
        start.abort()  # the others stop waiting for this one
        raise


def _client(port: int, username: str, stage: str, warmup: int, rounds: int, start: threading.Barrier,
            seen: set, lock: threading.Lock, out: dict) -> None:
    s = Session(port)
    s.login(username)
    t = {k: [] for k in ("claim", "page", "claim+page", "submit", "page, first view", "page, drawn before")}
    verdicts = 0
    for i in range(warmup + rounds):
        if i == warmup:
            start.wait(timeout=600)
        t0 = time.perf_counter()
        status, location, _ = s.request("POST", f"/curation/queue/{stage}/next/", {})
        t1 = time.perf_counter()
        if status != 302:
            raise RuntimeError(f"next item: {status}")
        if "/curation/items/" not in location:
            break  # nothing left to claim
        status, _, page = s.request("GET", location)
        t2 = time.perf_counter()
        # A graph the worker has not drawn is queued and shown as "Drawing…" (data-poll): no worker
        # runs here, so with --svg cold every page shows the placeholder.
        if status != 200 or (b"<svg" not in page and b"data-poll=" not in page):
            raise RuntimeError(f"{location}: {status}, svg={b'<svg' in page}")
        with lock:
            first = location not in seen
            seen.add(location)
        status, after, _ = s.request("POST", location + "submit/",
                                     {"verdict": "accept", "comment": "", "flags": "[]"})
        t3 = time.perf_counter()
        if status != 302:
            raise RuntimeError(f"submit {location}: {status}")
        verdicts += 1
        if i < warmup:
            continue
        t["claim"].append((t1 - t0) * 1000)
        t["page"].append((t2 - t1) * 1000)
        t["claim+page"].append((t2 - t0) * 1000)
        t["submit"].append((t3 - t2) * 1000)
        t["page, first view" if first else "page, drawn before"].append((t2 - t1) * 1000)
    if rounds and not t["submit"]:
        start.abort()
    out[username] = {"t": t, "verdicts": verdicts, "timed": len(t["submit"]), "end": time.perf_counter()}


def _cpu_of(pids) -> dict[int, float]:
    """CPU ms of each process (with its waited-for children) that is still there."""
    out = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) * TICK
    return out


def _cpu_since(before: dict[int, float], pids) -> float:
    """CPU ms spent since `before` by `pids`; a process that started since counts from zero (a
    server thread's first request opens its database connection: a new backend)."""
    return sum(ms - before.get(pid, 0.0) for pid, ms in _cpu_of(pids).items())


def reference_loop_ms() -> float:
    """The machine's speed now: the best of three runs of a fixed pure-Python loop (lower is
    faster). Shared machines vary: runs on the same code differ by as much as this does."""
    best = float("inf")
    for _ in range(3):
        t = time.process_time()
        total = 0
        for i in range(300_000):
            total += i * i % 7
        best = min(best, (time.process_time() - t) * 1000)
    return best


def _tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                pass
    return pids


def _postgres_pids(db_name: str) -> list[int]:
    """The Postgres backends serving `db_name` (their title names the database), plus the WAL writer."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                title = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if title.startswith("postgres:") and (f" {db_name} " in title or "walwriter" in title):
                out.append(int(d.name))
    return out


def _machine_busy_ms() -> float:
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) * TICK  # all but idle and iowait


def _free_port() -> int:
    if os.environ.get("BENCH_PORT"):  # a port of one's own on a shared machine
        return int(os.environ["BENCH_PORT"])
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_one(args) -> dict:
    url = args.one
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("SECRET_KEY", "benchmark-only-secret-key-" + "x" * 30)
    os.environ["DJANGO_SETTINGS_MODULE"] = "almita_web.settings"
    os.environ.pop("ALMITA_TESTING", None)  # real password hashers: the server checks them at login
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection, connections

    from review import describe_items, load

    settings.DATABASES["default"].setdefault("TEST", {})["MIGRATE"] = False
    db_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    cache_dir = tempfile.mkdtemp(prefix="bench-review-http-cache-")
    server = None
    try:
        users = load(lineages=args.lineages, annotators=args.clients, render_svg=args.svg == "cached", password=PASSWORD)
        items = describe_items()
        from curation.models import Review, ReviewStage

        connections.close_all()
        if connection.vendor == "sqlite":
            server_url = "sqlite:///" + str(db_name)
        else:
            server_url = urlunparse(urlparse(url)._replace(path="/" + db_name))
        port = _free_port()
        cmd = [sys.executable, "-m", "almita_web.serve"]
        env = {k: v for k, v in os.environ.items() if k != "ALMITA_TESTING"}  # (bench/review.py sets it)
        env = {**env, "DATABASE_URL": server_url, "DEBUG": "false", "ALLOWED_HOSTS": "127.0.0.1",
               "CACHE_DIR": cache_dir, "WEB_BIND": f"127.0.0.1:{port}"}
        overrides = {"WEB_WORKERS": args.workers, "WEB_THREADS": args.threads}
        env.update({k: str(v) for k, v in overrides.items() if v})
        log = open(Path(cache_dir) / "server.log", "w+b")  # not a pipe: a full pipe would stall the server
        server = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        _wait_ready(port, server, log)
        opts = server_options(env)
        described = f"granian (almita_web/serve.py) {opts['workers']} x {opts['blocking_threads']}"
        seen: set = set()
        lock = threading.Lock()
        out: dict = {}
        start = threading.Barrier(len(users) + 1)
        threads = [threading.Thread(target=client, args=(port, u, ReviewStage.FLOWGRAPH, 2, args.per_client, start,
                                                         seen, lock, out)) for u in users]
        for th in threads:
            th.start()
        try:
            start.wait()  # every client logged in and warmed up
        except threading.BrokenBarrierError:
            for th in threads:
                th.join(30)
            raise RuntimeError(f"a client failed: {[r['error'] for r in out.values() if 'error' in r]}") from None
        load_before = os.getloadavg()
        speed = reference_loop_ms()
        pg = _postgres_pids(db_name) if connection.vendor == "postgresql" else []
        srv = _tree(server.pid)
        c0, s0, d0, m0 = time.process_time(), _cpu_of(srv), _cpu_of(pg), _machine_busy_ms()
        t0 = time.perf_counter()
        for th in threads:
            th.join()
        wall = max(r["end"] for r in out.values()) - t0
        pg_after = _postgres_pids(db_name) if connection.vendor == "postgresql" else []
        cpu = {"client": (time.process_time() - c0) * 1000, "server": _cpu_since(s0, _tree(server.pid)),
               "database": _cpu_since(d0, set(pg) | set(pg_after)), "machine": _machine_busy_ms() - m0}
        merged: dict[str, list[float]] = {}
        for r in out.values():
            for k, v in r["t"].items():
                merged.setdefault(k, []).extend(v)
        stored = Review.objects.count()
        sent = sum(r["verdicts"] for r in out.values())
        if stored != sent:
            raise RuntimeError(f"{sent} verdicts sent but {stored} stored")
        return {"vendor": connection.vendor, "svg": args.svg, "items": items, "clients": len(users),
                "server": described, "verdicts": sum(r["timed"] for r in out.values()), "wall": wall, "t": merged,
                "cpu_ms": cpu, "cpus": os.cpu_count(), "load": load_before, "reference_ms": speed, "load_after": os.getloadavg()[0]}
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
        connections.close_all()
        connection.creation.destroy_test_db(db_name, verbosity=0)
        shutil.rmtree(cache_dir, ignore_errors=True)


def _wait_ready(port: int, server: subprocess.Popen, log) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"the server exited: {log.read().decode()[-2000:]}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz", headers={"Host": "127.0.0.1"})
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("the server did not answer /healthz within 60 s")

"""The production web server's configuration: one file (gunicorn.conf.py) that compose, the
Dockerfile and bench/review_http.py all start gunicorn with."""
import contextlib
import http.client
import os
import runpy
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def test_gunicorn_config_is_threaded_with_keep_alive(monkeypatch):
    for name in ("WEB_WORKERS", "WEB_THREADS", "WEB_BIND"):
        monkeypatch.delenv(name, raising=False)
    conf = runpy.run_path(str(REPO / "gunicorn.conf.py"))
    assert conf["worker_class"] == "gthread" and conf["threads"] > 1 and conf["keepalive"] > 5
    assert conf["workers"] >= 2 and conf["bind"] == "0.0.0.0:8000"
    cores = __import__("os").cpu_count() or 1
    # Measured per database (bench/review_http.py): Postgres one process per core with four
    # threads; SQLite (one writer at a time) twice the processes with two threads each.
    monkeypatch.setenv("DATABASE_URL", "postgres://u@h:5432/db")
    conf = runpy.run_path(str(REPO / "gunicorn.conf.py"))
    assert (conf["workers"], conf["threads"]) == (max(2, cores), 4)
    for url in ("sqlite:////tmp/x.sqlite3", ""):
        monkeypatch.setenv("DATABASE_URL", url)
        conf = runpy.run_path(str(REPO / "gunicorn.conf.py"))
        assert (conf["workers"], conf["threads"]) == (max(4, 2 * cores), 2)
    monkeypatch.setenv("WEB_WORKERS", "5")
    monkeypatch.setenv("WEB_THREADS", "8")
    conf = runpy.run_path(str(REPO / "gunicorn.conf.py"))
    assert (conf["workers"], conf["threads"]) == (5, 8)


def test_compose_and_dockerfile_start_gunicorn_with_it():
    web = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]["web"]["command"]
    assert "gunicorn almita_web.wsgi:application --config gunicorn.conf.py" in " ".join(web)
    cmd = [line for line in (REPO / "Dockerfile").read_text().splitlines() if line.startswith("CMD")]
    assert cmd == ['CMD ["gunicorn", "almita_web.wsgi:application", "--config", "gunicorn.conf.py"]']
    assert "gunicorn.conf.py" in (REPO / "bench" / "review_http_run.py").read_text()


@contextlib.contextmanager
def serving(tmp_path, **env_extra):
    """gunicorn as deployed (gunicorn.conf.py, DEBUG off) on a free port; yields the port once it
    answers /healthz."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "DEBUG": "false", "SECRET_KEY": "static-test-key", "WEB_WORKERS": "1",
           "WEB_THREADS": "2", "WEB_BIND": f"127.0.0.1:{port}",
           "DATABASE_URL": f"sqlite:///{tmp_path}/static.sqlite3", **env_extra}
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    proc = subprocess.Popen([gunicorn, "almita_web.wsgi:application", "--config", "gunicorn.conf.py"],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
                    assert r.status == 200
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
                assert time.monotonic() < deadline, "gunicorn did not answer within 30 s"
                time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_the_production_server_serves_static_files(tmp_path):
    """gunicorn as deployed (DEBUG off) answers /static/ itself: the pages' CSS and JS load."""
    with serving(tmp_path) as port:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/static/css/app.css", timeout=5) as r:
            body, ctype = r.read(), r.headers["Content-Type"]
    assert ctype.startswith("text/css")
    assert body == (REPO / "static" / "css" / "app.css").read_bytes()


def _connection_headers(port: int, n: int) -> list[str]:
    """The Connection header of each of `n` requests sent through one http.client connection
    (which opens a new socket after a response that says close)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    out = []
    for _ in range(n):
        conn.request("GET", "/healthz", headers={"Host": "127.0.0.1"})
        resp = conn.getresponse()
        assert resp.status == 200 and resp.read() == b"ok"
        out.append(resp.getheader("Connection", "").lower())
    conn.close()
    return out


def test_a_kept_alive_connection_is_closed_after_its_keepalive_requests(tmp_path, monkeypatch):
    """pre_request: the Nth request on a connection is answered with Connection: close (spreads
    long-lived connections over the worker processes again); the client's next request opens a
    new connection, whose count starts over. 0 turns the limit off; the default is 20."""
    with serving(tmp_path, WEB_KEEPALIVE_REQUESTS="3") as port:
        assert _connection_headers(port, 7) == ["keep-alive", "keep-alive", "close"] * 2 + ["keep-alive"]
    with serving(tmp_path, WEB_KEEPALIVE_REQUESTS="0") as port:
        assert set(_connection_headers(port, 25)) == {"keep-alive"}
    monkeypatch.delenv("WEB_KEEPALIVE_REQUESTS", raising=False)
    assert runpy.run_path(str(REPO / "gunicorn.conf.py"))["keepalive_requests"] == 20


def test_gunicorn_workers_hand_over_the_gil_every_millisecond_unless_told_otherwise(monkeypatch):
    """gunicorn.conf.py's post_fork sets the thread switch interval (WEB_SWITCH_INTERVAL overrides)."""
    import sys

    conf = runpy.run_path(str(Path(__file__).resolve().parents[2] / "gunicorn.conf.py"))
    before = sys.getswitchinterval()
    try:
        monkeypatch.delenv("WEB_SWITCH_INTERVAL", raising=False)
        conf["post_fork"](None, None)
        assert sys.getswitchinterval() == pytest.approx(0.001)
        monkeypatch.setenv("WEB_SWITCH_INTERVAL", "0.004")
        conf["post_fork"](None, None)
        assert sys.getswitchinterval() == pytest.approx(0.004)
    finally:
        sys.setswitchinterval(before)


def test_a_worker_imports_its_views_then_freezes_what_start_up_made(tmp_path):
    """post_worker_init: the views are imported before the first request and the start-up's
    objects are out of the collector's way (in a child process: freezing is process-wide)."""
    import json
    import os
    import subprocess
    import sys

    code = (
        "import gc, json, runpy, sys, django; django.setup();"
        f"conf = runpy.run_path({str(REPO / 'gunicorn.conf.py')!r});"
        "before = ('curation.views' in sys.modules, gc.get_freeze_count());"
        "conf['post_worker_init'](None);"
        "print(json.dumps([before, 'curation.views' in sys.modules, gc.get_freeze_count(), len(gc.get_objects())]))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "almita_web.settings", "DEBUG": "false",
           "SECRET_KEY": "freeze-test-key", "DATABASE_URL": f"sqlite:///{tmp_path}/f.sqlite3"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    (imported_before, frozen_before), imported, frozen, tracked = json.loads(out.stdout.strip().splitlines()[-1])
    assert not imported_before and frozen_before == 0
    assert imported and frozen > 50_000 and tracked < frozen / 10

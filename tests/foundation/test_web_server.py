"""The production web server: granian started by almita_web/serve.py, which compose, the
Dockerfile and bench/review_http.py all run, serving almita_web/production.py's application."""
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from almita_web.serve import options

REPO = Path(__file__).resolve().parents[2]


def test_server_options_follow_the_database_and_the_environment():
    cores = os.cpu_count() or 1
    # Measured per database (bench/review_http.py): Postgres one process per core with four
    # threads; SQLite (one writer at a time) twice the processes with two threads each.
    pg = options({"DATABASE_URL": "postgres://u@h:5432/db"})
    assert (pg["workers"], pg["blocking_threads"]) == (max(2, cores), 4)
    assert (pg["address"], pg["port"], pg["log_access"]) == ("0.0.0.0", 8000, False)
    for url in ("sqlite:////tmp/x.sqlite3", ""):
        lite = options({"DATABASE_URL": url})
        assert (lite["workers"], lite["blocking_threads"]) == (max(4, 2 * cores), 2)
    custom = options({"WEB_WORKERS": "5", "WEB_THREADS": "8", "WEB_BIND": "127.0.0.1:9001", "WEB_ACCESS_LOG": "1"})
    assert custom == {"address": "127.0.0.1", "port": 9001, "workers": 5, "blocking_threads": 8, "log_access": True}
    assert options({"WEB_BIND": "[::1]:8080"})["address"] == "::1"
    for bad in ("8000", "localhost:http", ":8000"):
        with pytest.raises(SystemExit, match="WEB_BIND must be host:port"):
            options({"WEB_BIND": bad})


def test_compose_the_dockerfile_and_the_benchmark_start_the_same_server():
    web = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]["web"]["command"]
    assert " ".join(web).endswith("&& python -m almita_web.serve")
    cmd = [line for line in (REPO / "Dockerfile").read_text().splitlines() if line.startswith("CMD")]
    assert cmd == ['CMD ["python", "-m", "almita_web.serve"]']
    assert '"-m", "almita_web.serve"' in (REPO / "bench" / "review_http_run.py").read_text()


def test_the_server_refuses_to_start_without_a_secret_key(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    env.update(DEBUG="false", DATABASE_URL=f"sqlite:///{tmp_path}/x.sqlite3", WEB_BIND="127.0.0.1:1")
    out = subprocess.run([sys.executable, "-m", "almita_web.serve"], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 1
    assert "almita_web.serve: SECRET_KEY must be set when DEBUG is off" in out.stderr


@contextlib.contextmanager
def serving(tmp_path, **env_extra):
    """The server as deployed (DEBUG off, one process) on a free port; yields the port once it
    answers /healthz."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "DEBUG": "false", "SECRET_KEY": "static-test-key", "WEB_WORKERS": "1",
           "WEB_THREADS": "2", "WEB_BIND": f"127.0.0.1:{port}",
           "DATABASE_URL": f"sqlite:///{tmp_path}/static.sqlite3", **env_extra}
    log = open(tmp_path / "server.log", "w+b")
    proc = subprocess.Popen([sys.executable, "-m", "almita_web.serve"], cwd=REPO, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
                    assert r.status == 200
                break
            except OSError:
                log.seek(0)
                assert proc.poll() is None, log.read().decode()[-2000:]
                assert time.monotonic() < deadline, "the server did not answer within 30 s"
                time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_the_production_server_serves_static_files(tmp_path):
    """The server as deployed (DEBUG off) answers /static/ itself: the pages' CSS and JS load."""
    with serving(tmp_path) as port:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/static/css/app.css", timeout=5) as r:
            body, ctype = r.read(), r.headers["Content-Type"]
    assert ctype.startswith("text/css")
    assert body == (REPO / "static" / "css" / "app.css").read_bytes()


def test_a_worker_keeps_the_process_environment_from_django(tmp_path):
    """production.py (what each granian worker imports): a request's environ reaches Django
    without the process's own variables (SECRET_KEY, DATABASE_URL), with its own."""
    code = (
        "import json, os, sys;"
        "from almita_web import production;"
        "seen = [];"
        "production.django_application = lambda environ, start: (seen.append(environ), start('200 OK', []), [b''])[2];"
        "headers = [];"
        "production.application({**os.environ, 'PATH_INFO': '/x', 'REQUEST_METHOD': 'GET', 'HTTP_HOST': 'h',"
        " 'wsgi.url_scheme': 'http'}, lambda status, h, exc_info=None: headers.extend(h));"
        "print(json.dumps({'keys': sorted(seen[0]), 'headers': headers}))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "almita_web.settings", "DEBUG": "false",
           "SECRET_KEY": "freeze-test-key", "DATABASE_URL": f"sqlite:///{tmp_path}/f.sqlite3"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert {"PATH_INFO", "REQUEST_METHOD", "HTTP_HOST", "wsgi.url_scheme"} <= set(got["keys"])
    assert not {"SECRET_KEY", "DATABASE_URL", "DEBUG", "PATH", "HOME"} & set(got["keys"])
    assert got["headers"] == []


@pytest.mark.parametrize("override, interval", [("", 0.001), ("0.004", 0.004)])
def test_a_worker_imports_its_views_and_freezes_them(tmp_path, override, interval):
    """production.py's measured pieces: every view imported before the first request, what start-up
    made frozen out of the collector's way, and the 1 ms switch interval (WEB_SWITCH_INTERVAL)."""
    code = ("import gc, json, sys; from almita_web import production;"
            "print(json.dumps({'frozen': gc.get_freeze_count(), 'interval': sys.getswitchinterval(),"
            " 'views': 'curation.reviews.views' in sys.modules}))")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "almita_web.settings", "DEBUG": "false", "SECRET_KEY": "k",
           "DATABASE_URL": f"sqlite:///{tmp_path}/f.sqlite3", "WEB_SWITCH_INTERVAL": override}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["frozen"] > 50_000 and got["views"] and abs(got["interval"] - interval) < 1e-9

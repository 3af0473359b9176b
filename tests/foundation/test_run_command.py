"""README command 1 end to end: set up, start web + worker, log in, Ctrl-C stops both."""
import http.cookiejar
import os
import re
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.worker]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_run_serves_a_logged_in_page_and_stops_on_ctrl_c(tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE")}
    env.update({"PORT": str(port), "ALMITA_VAR_DIR": str(tmp_path / "var")})
    log = open(tmp_path / "run.log", "wb")
    proc = subprocess.Popen(["make", "run"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        output = ""
        while time.monotonic() < deadline:
            output = (tmp_path / "run.log").read_text(errors="replace")
            if f"is running at http://127.0.0.1:{port}/" in output:
                break
            assert proc.poll() is None, output
            time.sleep(0.5)
        else:
            pytest.fail("no URL printed:\n" + output)
        assert "annotator" in output and "almita-annotator" in output  # the logins are printed
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        base = f"http://127.0.0.1:{port}"
        for _ in range(60):
            try:
                page = opener.open(base + "/login/").read().decode()
                break
            except OSError:
                time.sleep(0.5)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        data = urllib.parse.urlencode({"username": "researcher", "password": "almita-researcher",
                                       "csrfmiddlewaretoken": token, "next": "/"}).encode()
        request = urllib.request.Request(base + "/login/", data=data, headers={"Referer": base + "/login/"})
        home = opener.open(request).read().decode()
        assert "researcher" in home and "Log out" in home
    finally:
        if proc.poll() is not None:
            pytest.fail("make run exited early:\n" + (tmp_path / "run.log").read_text(errors="replace")[-3000:])
        # The banner comes after the worker is ready, and nothing of the worker's follows it.
        output = (tmp_path / "run.log").read_text(errors="replace")
        after = output.split(f"is running at http://127.0.0.1:{port}/", 1)[1]
        assert "celery@" not in after and "[tasks]" not in after, after[:2000]
        worker_log = (tmp_path / "var" / "log" / "worker.log").read_text(errors="replace")
        hooks_log = (tmp_path / "var" / "log" / "webhooks.log").read_text(errors="replace")
        assert " ready." in worker_log and " ready." in hooks_log
        # Webhook deliveries have their own worker process; the generation worker does not take them.
        assert ".> webhooks" in hooks_log and ".> celery" not in hooks_log
        assert ".> celery" in worker_log and ".> webhooks" not in worker_log
        started = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        stopped_after = time.monotonic() - started
    # Ctrl-C stopped the web server and the worker, within 3 s, and the script reported no error
    # (make itself always ends by the SIGINT it received, so its own status is the signal's).
    leftover = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True).stdout.strip()
    assert leftover == "", leftover
    assert stopped_after <= 3.0, stopped_after
    output = (tmp_path / "run.log").read_text(errors="replace")
    assert "Error" not in output.split(">> stopping", 1)[1], output[-2000:]


def test_run_script_exits_0_on_ctrl_c(tmp_path):
    """scripts/run.sh itself (what `make run` runs): SIGINT → both processes gone, exit status 0."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE")}
    env.update({"PORT": str(port), "ALMITA_VAR_DIR": str(tmp_path / "var")})
    log_path = tmp_path / "run.log"
    proc = subprocess.Popen(["scripts/run.sh"], cwd=REPO, env=env, stdout=open(log_path, "wb"),
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while f"is running at http://127.0.0.1:{port}/" not in log_path.read_text(errors="replace"):
            assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text(errors="replace")
            time.sleep(0.3)
        started = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(30) == 0, log_path.read_text(errors="replace")[-2000:]
        assert time.monotonic() - started <= 3.0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True).stdout.strip() == ""

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
            if f"http://127.0.0.1:{port}/" in output:
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
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
    # Ctrl-C stopped the web server and the worker: nothing of the group is left.
    time.sleep(1)
    leftover = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True).stdout.strip()
    assert leftover == "", leftover

"""The production web server's configuration: one file (gunicorn.conf.py) that compose, the
Dockerfile and bench/review_http.py all start gunicorn with."""
import runpy
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def test_gunicorn_config_is_threaded_with_keep_alive(monkeypatch):
    for name in ("WEB_WORKERS", "WEB_THREADS", "WEB_BIND"):
        monkeypatch.delenv(name, raising=False)
    conf = runpy.run_path(str(REPO / "gunicorn.conf.py"))
    assert conf["worker_class"] == "gthread" and conf["threads"] > 1 and conf["keepalive"] > 5
    assert conf["workers"] >= 2 and conf["bind"] == "0.0.0.0:8000"
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

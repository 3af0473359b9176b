"""docker-compose.yml can't run here (no Docker engine): check its shape and its entry points."""
import importlib
import importlib.util
import shlex
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def load() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def command_words(service: dict) -> list[str]:
    cmd = service["command"]
    words = cmd if isinstance(cmd, list) else shlex.split(cmd)
    if words[:2] == ["sh", "-c"]:
        words = shlex.split(words[2].replace("&&", " && "))
    return words


def test_services_and_volume():
    compose = load()
    assert set(compose["services"]) == {"postgres", "redis", "web", "worker", "webhooks"}
    assert "pgdata" in compose["volumes"]
    assert "pgdata:/var/lib/postgresql/data" in compose["services"]["postgres"]["volumes"]
    for name, service in compose["services"].items():
        assert "healthcheck" in service, name


def test_app_services_point_at_postgres_and_redis():
    compose = load()
    for name in ("web", "worker", "webhooks"):
        service = compose["services"][name]
        env = service["environment"]
        assert env["DATABASE_URL"].startswith("postgres://") and "@postgres:5432/" in env["DATABASE_URL"]
        assert env["CELERY_BROKER_URL"].startswith("redis://redis:6379")
        assert "SECRET_KEY" in env and env["DEBUG"] == "false"
        assert service["build"] == "."
        assert set(service["depends_on"]) == {"postgres", "redis"}
        assert all(dep["condition"] == "service_healthy" for dep in service["depends_on"].values())


def test_webhook_deliveries_have_their_own_worker():
    compose = load()
    hooks = command_words(compose["services"]["webhooks"])
    assert hooks[hooks.index("-Q") + 1] == "webhooks"
    worker = command_words(compose["services"]["worker"])
    assert "webhooks" not in (worker[worker.index("-Q") + 1] if "-Q" in worker else "celery").split(",")


def _module_exists(dotted: str) -> bool:
    module, _, attr = dotted.partition(":")
    mod = importlib.import_module(module)
    return not attr or hasattr(mod, attr)


def test_entry_points_exist():
    compose = load()
    web = command_words(compose["services"]["web"])
    assert "manage.py" in web and "migrate" in web and (REPO / "manage.py").exists()
    server = web[web.index("-m") + 1]
    assert server == "almita_web.serve" and _module_exists(f"{server}:main")
    # (the WSGI target is imported in the server's own processes: importing it freezes the collector)
    assert importlib.util.find_spec(importlib.import_module(server).TARGET.partition(":")[0]) is not None
    worker = command_words(compose["services"]["worker"])
    assert worker[:2] == ["celery", "-A"]
    app_module = importlib.import_module(worker[2])
    assert hasattr(app_module, "celery_app")
    assert "worker" in worker


def test_dockerfile_installs_graphviz_and_the_runtime_lock_only():
    text = (REPO / "Dockerfile").read_text()
    assert "graphviz" in text
    assert "FROM python:3.11" in text
    installs = [line for line in text.splitlines() if "pip install" in line]
    assert installs and all("--require-hashes" in line for line in installs), installs
    locks = {word for line in installs for word in line.split() if word.endswith(".lock")}
    assert locks == {"requirements/runtime.lock"}, locks  # no test tools, no ML extra in the image

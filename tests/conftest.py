"""Shared fixtures: personas for every role, and a real Celery worker process."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, RESEARCHER, assign_roles

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"
PASSWORD = "pw-for-tests-1"


def make_user(username: str, *roles: str) -> User:
    user = User.objects.create_user(username=username, password=PASSWORD)
    assign_roles(user, roles)
    return user


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The Default project exists, as the migration creates it (the suite runs without migrations)."""
    from projects.context import default_project, forget_cached

    with django_db_blocker.unblock():
        default_project()
        forget_cached()


@pytest.fixture(autouse=True)
def _forget_projects():
    """Each test's database starts without the previous test's Default project (rolled back)."""
    from django.urls import set_script_prefix

    from projects.context import forget_cached

    forget_cached()
    set_script_prefix("/")
    yield
    forget_cached()


@pytest.fixture
def annotator_a(db) -> User:
    return make_user("annotator_a", ANNOTATOR)


@pytest.fixture
def annotator_b(db) -> User:
    return make_user("annotator_b", ANNOTATOR)


@pytest.fixture
def adjudicator(db) -> User:
    return make_user("adjudicator", ADJUDICATOR)


@pytest.fixture
def researcher(db) -> User:
    return make_user("researcher", RESEARCHER)


@pytest.fixture
def admin_user(db) -> User:
    return make_user("admin", ADMIN)


@pytest.fixture
def outsider(db) -> User:
    """Logged in, but holds no role."""
    return make_user("outsider")


@pytest.fixture
def personas(annotator_a, annotator_b, adjudicator, researcher, admin_user, outsider) -> dict[str, User]:
    return {
        "annotator": annotator_a,
        "annotator_b": annotator_b,
        "adjudicator": adjudicator,
        "researcher": researcher,
        "admin": admin_user,
        "outsider": outsider,
    }


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present beside the checkout")
    return SHARED_DATA


def database_url_for_subprocess() -> str:
    """A DATABASE_URL pointing a child process at the database the tests are using now."""
    from django.db import connection

    s = connection.settings_dict
    if connection.vendor == "sqlite":
        name = s["NAME"]
        if name == ":memory:" or "mode=memory" in str(name):
            raise RuntimeError("a worker process needs a file-based SQLite test database")
        return f"sqlite:///{name}" if str(name).startswith("/") else f"sqlite:///{REPO / name}"
    if connection.vendor == "postgresql":
        auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
        return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    raise RuntimeError(f"unsupported database vendor {connection.vendor}")


class WorkerProcess:
    def __init__(self, env: dict[str, str], log_path: Path, concurrency: int = 4,
                 queues: str = "celery,webhooks", name: str = "celery") -> None:
        self.env = env
        self.name = name
        self.log_path = log_path
        self.concurrency = concurrency
        self.queues = queues  # both by default; scripts/run.sh gives webhooks their own process
        self.proc: subprocess.Popen | None = None

    def start(self) -> "WorkerProcess":
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "almita_web", "worker", "--loglevel=INFO",
             "--pool=threads", f"--concurrency={self.concurrency}", "-Q", self.queues, "-n", f"{self.name}@%h",
             "--without-gossip",
             "--without-mingle", "--without-heartbeat"],
            cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT,
        )
        return self

    def kill(self) -> None:
        """SIGKILL: the worker gets no chance to ack or clean up."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    def wait_ready(self, timeout: float = 60.0) -> "WorkerProcess":
        """Until the worker logged that it is ready (it then answers pings and takes tasks)."""
        wait_for(lambda: " ready." in self.log() or (self.proc and self.proc.poll() is not None), timeout=timeout,
                 interval=0.1, message="the worker to be ready")
        assert self.proc and self.proc.poll() is None, self.log()[-3000:]
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def _purge_queues() -> None:
    """Drop messages earlier tests of this session left on the broker (their rows were flushed, so a
    worker would fail on them: e.g. evaluate_lane for a run that no longer exists)."""
    from almita_web.celery import app

    try:
        with app.connection_for_write() as conn:
            channel = conn.default_channel
            for queue in (app.conf.task_default_queue, settings.WEBHOOK_QUEUE):
                try:
                    channel.queue_purge(queue)
                except Exception:  # noqa: BLE001 - a queue never declared has nothing to purge
                    pass
    except Exception:  # noqa: BLE001 - no broker reachable: the worker will say so itself
        pass


@pytest.fixture
def celery_worker_factory(transactional_db, tmp_path):
    """Start real `celery worker` processes on the configured broker and the test database."""
    workers: list[WorkerProcess] = []
    _purge_queues()

    def factory(extra_env: dict[str, str] | None = None, concurrency: int = 4,
                queues: str = "celery,webhooks") -> WorkerProcess:
        env = dict(os.environ)
        env["DATABASE_URL"] = database_url_for_subprocess()
        env["ALMITA_VAR_DIR"] = str(settings.VAR_DIR)
        env.setdefault("CELERY_BROKER_URL", os.environ.get("CELERY_BROKER_URL", "filesystem://"))
        env.update(extra_env or {})
        worker = WorkerProcess(env, tmp_path / f"worker{len(workers)}.log", concurrency, queues,
                               name=f"worker{len(workers)}").start()
        workers.append(worker)
        return worker

    yield factory
    for worker in workers:
        worker.stop()


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.05, message: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")


class DrawingQueue(list):
    """generation.drawing_make tasks the pages queued; run() makes them as the worker would."""

    def run(self) -> int:
        from generation import tasks

        n = 0
        while self:
            tasks.drawing_make_task(*self.pop(0))
            n += 1
        return n


@pytest.fixture
def drawing_queue(monkeypatch):
    """Pages' drawings (generation.drawing_cache) queued here instead of on the broker, under a
    cache prefix of this test's own (the shared cache outlives a test)."""
    import uuid

    from generation import drawing_cache, tasks

    queue = DrawingQueue()
    monkeypatch.setattr(drawing_cache, "PREFIX", f"test-drawing-{uuid.uuid4().hex}")
    monkeypatch.setattr(tasks.drawing_make_task, "delay", lambda *args: queue.append(args))
    return queue


@pytest.fixture
def drawing_worker(drawing_queue, monkeypatch):
    """A stand-in worker for browser tests: each queued drawing is made in a thread shortly after
    the request has answered, so the page shows "Drawing…" and polls until it arrives."""
    import threading

    from generation import tasks

    def later(*args) -> None:
        timer = threading.Timer(0.5, lambda: tasks.drawing_make_task(*args))
        timer.daemon = True
        timer.start()

    monkeypatch.setattr(tasks.drawing_make_task, "delay", later)
    return drawing_queue


@pytest.fixture(autouse=True)
def _no_stored_analytics():
    """The stored analytics table (curation.agreement.precompute) is keyed by the largest ids,
    which a rolled-back SQLite test reuses: no test sees another's figures."""
    from curation.agreement.precompute import forget

    forget()
    yield
    forget()


@pytest.fixture
def analytics_inline(monkeypatch):
    """No worker: the analytics page computes stale figures itself (as with CELERY_TASK_ALWAYS_EAGER)."""
    from curation.agreement import precompute

    monkeypatch.setattr(precompute, "inline", lambda: True)

"""What the generation benchmark's parts share: a throw-away database, real worker processes, faults.

Imported by bench/generation.py and its parts (bench/generation_rate.py, bench/generation_economy.py).
"""
from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# Pool threads for concurrency C: enough to keep C requests in flight while others run their CPU part.
THREADS = lambda cap: int(os.environ.get("BENCH_THREADS", 0)) or 2 * cap + 2  # noqa: E731

def setup() -> Path:
    var_dir = Path(tempfile.mkdtemp(prefix="almita-bench-"))
    os.environ.setdefault("ALMITA_VAR_DIR", str(var_dir))
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{var_dir / 'bench.sqlite3'}")
    os.environ.setdefault("SECRET_KEY", "bench-only-secret")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")
    os.environ["LLM_CACHE"] = "false"
    os.environ["LLM_BACKOFF_BASE"] = "0.01"

    import django

    django.setup()
    from django.apps import apps
    from django.core.management import call_command
    from django.test.utils import override_settings

    # Build the schema straight from the models, so the bench needs no migration files (every
    # installed app: a data migration of one app would otherwise name another's missing migration).
    with override_settings(MIGRATION_MODULES={cfg.label: None for cfg in apps.get_app_configs()}):
        call_command("migrate", run_syncdb=True, verbosity=0)
    return var_dir


class Worker:
    """A real `celery worker` process with the given settings, waited for until it answers."""

    def __init__(self, var_dir: Path, env: dict[str, str], threads: int, profile: str | None = None) -> None:
        from generation.heartbeat import heartbeat_send
        from generation.models import WorkerHeartbeat

        self.log_path = var_dir / f"worker-{time.monotonic_ns()}.log"
        launcher = [str(REPO / "bench" / "profile_hook.py"), profile] if profile else ["-m", "celery"]
        self.proc = subprocess.Popen(
            [sys.executable, *launcher, "-A", "almita_web", "worker", "--loglevel=WARNING", "--pool=threads",
             f"--concurrency={threads}", "--without-gossip", "--without-mingle", "--without-heartbeat"],
            cwd=REPO, env={**os.environ, **env}, stdout=open(self.log_path, "ab"), stderr=subprocess.STDOUT)
        # Wait until *this* process answers a heartbeat (a worker already running answers too).
        nonces: list[str] = []
        deadline = time.monotonic() + 60
        while not WorkerHeartbeat.objects.filter(nonce__in=nonces, pid=self.proc.pid).exists():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()  # a worker left behind would poll its broker folder for good
                raise SystemExit(f"the worker did not start; see {self.log_path}")
            if len(nonces) < 2 or WorkerHeartbeat.objects.filter(nonce=nonces[-1]).exists():
                nonces.append(heartbeat_send())
            time.sleep(0.05)

    def wait(self, job, timeout: float):
        deadline = time.monotonic() + timeout
        while True:
            job.refresh_from_db()
            if job.is_terminal:
                return job
            if self.proc.poll() is not None:  # -11 was a segfault (seen under --profile's cProfile)
                raise SystemExit(f"the worker exited with code {self.proc.returncode} while job {job.pk} "
                                 f"was {job.status}; see {self.log_path}")
            if time.monotonic() > deadline:
                raise SystemExit(f"job {job.pk} stuck in {job.status}; see {self.log_path}")
            time.sleep(0.02)

    def cpu(self) -> float:
        """CPU seconds (user + system) this worker process used so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_workers(count: int, make) -> list[Worker]:
    """`count` workers from `make(i)`; when one does not start, the ones started are stopped too."""
    workers: list[Worker] = []
    try:
        for i in range(count):
            workers.append(make(i))
    except BaseException:
        for w in workers:
            w.stop()
        raise
    return workers


def fault_handler(inner, rate: float, seed: int):
    """Random faults in `rate` of requests, any number in a row: transport and content faults alike."""
    import threading

    from tests.fake_openai import Reply

    broken_graph = Reply(content="<flow>\n[N0](start_message){Hello}\n[E0](N0, N7){?}\n[N1](api){")
    pool = [Reply.rate_limited(0.01), Reply.server_error(500), Reply.server_error(503), Reply.truncated(),
            Reply.wrong_shape(), Reply.truncated_json(), broken_graph]
    rng = random.Random(seed)
    lock = threading.Lock()

    def handler(body: dict, n: int):
        with lock:
            fault = rng.random() < rate
            choice = rng.choice(pool)
        return choice if fault else inner(body, n)

    return handler

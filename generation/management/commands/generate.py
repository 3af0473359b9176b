"""Launch a generation job from the command line (the same job the dashboard launches)."""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from django.core.management.base import CommandError, CommandParser

from generation import services
from generation.models import GenerationJob, JobStatus
from generation.pipeline.sampling import SAMPLERS
from generation.services.config import SEED_MAX
from projects.commands import ProjectCommand


def bounded(kind: type, name: str):
    """An argparse type: a number within the job bounds, else a usage error (exit status 2)."""

    def parse(text: str):
        try:
            return services.job_config_normalise({"intents": 1, name: kind(text) if kind is float else text})[name]
        except (ValueError, OverflowError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = kind.__name__
    return parse


# `--wait` first asks the workers which queues they consume (the control channel, answered even
# when every pool thread is busy with a long item): this many tries of this many seconds.
PING_SECONDS = 2.0
PING_TRIES = 4


def live_worker() -> bool:
    """True when a worker on the broker answers and consumes the generation (default) queue; a
    worker of the webhooks queue alone (scripts/run.sh) runs no job."""
    from almita_web.celery import app

    default = app.conf.task_default_queue
    for _ in range(PING_TRIES):
        try:
            replies = app.control.inspect(timeout=PING_SECONDS).active_queues() or {}
        except Exception:  # noqa: BLE001 - a broker that cannot be reached has no live worker either
            return False
        if any(q.get("name") == default for queues in replies.values() for q in queues or []):
            return True
    return False


class Command(ProjectCommand):
    help = ("Launch a generation job: generate N intents, or start from imported intents, procedures, "
            "APIs or flowgraphs (--from-file). With --wait, print the funnel table when it ends.")

    def add_arguments(self, parser: CommandParser) -> None:
        start = parser.add_mutually_exclusive_group(required=True)
        start.add_argument("--intents", type=int, help="number of intents to generate (prompt A.1)")
        start.add_argument("--from-file", type=Path, help="JSON file of intents or procedures to start from")
        parser.add_argument("--procedures-per-intent", type=bounded(int, "procedures_per_intent"), default=1)
        parser.add_argument("--paths", type=bounded(int, "paths"), default=2, help="paths sampled per conversation graph")
        parser.add_argument("--sampler", choices=SAMPLERS, default="algorithm1")
        parser.add_argument("--noise", type=bounded(float, "noise"), default=0.0,
                            help="noise probability per assistant node")
        parser.add_argument("--seed", type=bounded(int, "seed"), default=0, help=f"0 to {SEED_MAX}")
        parser.add_argument("--temperature", action="append", default=[], metavar="STAGE=T",
                            help="temperature of one LLM stage, e.g. --temperature procedures=0.9 (repeatable)")
        parser.add_argument("--no-cache", action="store_true", help="call the endpoint even for prompts seen before")
        parser.add_argument("--batch", action="store_true",
                            help="send the LLM stages through the endpoint's Batch API (half the price; needs a worker)")
        parser.add_argument("--conversation-graph", choices=["llm", "deterministic"], default="deterministic")
        parser.add_argument("--conversations", choices=["llm", "offline", "procedure"], default="offline",
                            help="procedure = straight from procedures (A.7 ablation)")
        parser.add_argument("--cost-limit", type=bounded(float, "cost_limit"), default=None, metavar="USD",
                            help="stop the job (failed, everything made so far kept) once it has cost this much")
        parser.add_argument("--api-chains", type=int, default=None, metavar="N",
                            help="seed procedures from N chains of connected APIs (ToolDial-style; see --chain-length)")
        parser.add_argument("--chain-length", type=int, default=2, metavar="L", help="APIs per chain, 2 to 4")
        parser.add_argument("--chain-apis", type=Path, default=None, metavar="FILE",
                            help="the APIs to chain (JSON, any shape the api_graph command reads); default: every API "
                                 "in the database")
        parser.add_argument("--name", default="")
        parser.add_argument("--wait", action="store_true", help="wait for the job and print the funnel table")
        parser.add_argument("--inline", action="store_true", help="run in this process instead of the workers")
        parser.add_argument("--timeout", type=float, default=6 * 3600, help="seconds --wait waits at most")

    def handle(self, *args, **opts) -> None:
        import_data = None
        if opts["from_file"] is not None:
            try:
                import_data = json.loads(opts["from_file"].read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                raise CommandError(f"cannot read {opts['from_file']}: {exc}") from None
        config = {
            "intents": opts["intents"] or 0, "procedures_per_intent": opts["procedures_per_intent"],
            "paths": opts["paths"], "sampler": opts["sampler"], "noise": opts["noise"], "seed": opts["seed"],
            "conversation_graph": opts["conversation_graph"], "conversations": opts["conversations"],
            "cache": not opts["no_cache"], "temperatures": {}, "batch": opts["batch"],
        }
        if opts["cost_limit"] is not None:
            config["cost_limit"] = opts["cost_limit"]
        if opts["api_chains"] is not None:
            config["api_chains"] = {"count": opts["api_chains"], "length": opts["chain_length"]}
            if opts["chain_apis"] is not None:
                try:
                    config["api_chains"]["apis"] = json.loads(opts["chain_apis"].read_text(encoding="utf-8"))
                except (OSError, json.JSONDecodeError) as exc:
                    raise CommandError(f"cannot read {opts['chain_apis']}: {exc}", returncode=2) from None
        elif opts["chain_apis"] is not None:
            raise CommandError("--chain-apis needs --api-chains N", returncode=2)
        for item in opts["temperature"]:
            stage, sep, value = item.partition("=")
            if not sep:
                raise CommandError(f"--temperature {item!r}: write STAGE=T", returncode=2)
            config["temperatures"][stage.strip()] = value.strip()
        if opts["batch"] and opts["inline"]:
            raise CommandError("--batch needs a worker to poll the batches: leave out --inline", returncode=2)
        try:
            job = services.job_create(config=config, name=opts["name"] or "command line", import_data=import_data,
                                      enqueue=not opts["inline"])
        except services.JobConfigError as exc:
            raise CommandError(str(exc), returncode=2) from None
        self.stdout.write(f"job {job.pk} queued ({job.config['start']} onwards)")
        if opts["inline"]:
            job = services.job_run_inline(job=job)
        elif not opts["wait"]:
            return
        elif not live_worker():
            raise CommandError(
                f"no Celery worker of generation jobs answered within {PING_SECONDS * PING_TRIES:.0f} s, so nothing "
                f"runs job {job.pk}: "
                "start one (celery -A almita_web worker, or make run) and it will pick the job up; "
                "or run it here with --inline")
        deadline = time.monotonic() + opts["timeout"]
        last = ""
        while not job.is_terminal:
            services.job_watchdog(job)
            if time.monotonic() > deadline:
                raise CommandError(f"job {job.pk} still {job.status} after {opts['timeout']:.0f}s "
                                   "(is a worker running? start one with: celery -A almita_web worker)")
            time.sleep(0.5)
            job = GenerationJob.objects.get(pk=job.pk)
            line = " ".join(f"{r['stage']}={r['done']}/{r['total']}" for r in services.job_funnel(job)
                            if r["state"] in ("running", "planning"))
            if line and line != last:
                self.stdout.write(f"  {job.status}: {line}")
                last = line
        self.stdout.write(services.format_funnel(job))
        if job.status != JobStatus.SUCCEEDED:
            raise CommandError(f"job {job.pk} ended {job.status}" + (f": {job.error}" if job.error else ""))

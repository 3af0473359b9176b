"""Launch a generation job from the command line (the same job the dashboard launches)."""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from generation import services
from generation.models import GenerationJob, JobStatus
from generation.pipeline.sampling import SAMPLERS
from generation.services.config import SEED_MAX


def bounded(kind: type, name: str):
    """An argparse type: a number within the job bounds, else a usage error (exit status 2)."""

    def parse(text: str):
        try:
            return services.job_config_normalise({"intents": 1, name: kind(text) if kind is float else text})[name]
        except (ValueError, OverflowError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = kind.__name__
    return parse


class Command(BaseCommand):
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

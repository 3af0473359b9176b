"""python manage.py fill_gaps (--release R | --job J | --graph G) [--conversations llm|offline] [--wait]"""
from __future__ import annotations

import time

from django.core.management.base import CommandError

from curation.loop.services import ScopeError, resolve_scope
from curation.reviews.services import items_sync
from generation import gaps
from generation.coverage import format_report, report
from generation.models import GenerationJob, JobStatus
from generation.services import JobConfigError, format_funnel
from projects.commands import ProjectCommand


class Command(ProjectCommand):
    help = ("Launch a generation job that samples the fewest paths covering exactly the uncovered edges of "
            "the accepted graphs in scope, realises them as conversations, extracts tests and sends them to "
            "review. An edge gets GAP_FILL_RETRY_LIMIT attempts (default 3).")

    def add_arguments(self, parser) -> None:
        scope = parser.add_mutually_exclusive_group(required=True)
        scope.add_argument("--release", help="a release id, name (latest version) or name@version")
        scope.add_argument("--job", help="a generation job id")
        scope.add_argument("--graph", help="a conversation graph id")
        parser.add_argument("--conversations", choices=gaps.CONVERSATION_MODES, default="offline")
        parser.add_argument("--wait", action="store_true", help="wait for the job, then queue its items for review")
        parser.add_argument("--timeout", type=float, default=600.0)

    def handle(self, *args, **opts) -> None:
        try:
            label, graphs, _ = resolve_scope(release=opts["release"], job=opts["job"], graph=opts["graph"])
            job, plans = gaps.gaps_fill(graphs=graphs, conversations=opts["conversations"],
                                        name=f"Fill the gaps of {label}")
        except (ScopeError, JobConfigError, gaps.NothingToFill) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(gaps.format_plan(plans))
        self.stdout.write(f"job {job.pk} queued: {sum(len(p.paths) for p in plans)} paths "
                          f"(retry limit {gaps.retry_limit()} attempts per edge)")
        if not opts["wait"]:
            return
        deadline = time.monotonic() + opts["timeout"]
        while not job.is_terminal:
            if time.monotonic() > deadline:
                raise CommandError(f"job {job.pk} still {job.status} after {opts['timeout']:.0f}s "
                                   "(is a worker running? start one with: celery -A almita_web worker)")
            time.sleep(0.5)
            job = GenerationJob.objects.get(pk=job.pk)
        self.stdout.write(format_funnel(job))
        if job.status != JobStatus.SUCCEEDED:
            raise CommandError(f"job {job.pk} ended {job.status}" + (f": {job.error}" if job.error else ""))
        self.stdout.write(f"review items created: {items_sync()}")
        self.stdout.write("coverage by accepted conversations now (the new ones count once accepted):")
        self.stdout.write(format_report(report(graphs)))

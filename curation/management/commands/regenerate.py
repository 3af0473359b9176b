"""python manage.py regenerate (--procedure P | --flowgraph F | --graph G) [--wait]"""
from __future__ import annotations

import time

from django.core.management.base import CommandError

from curation.loop.services import FeedbackError, regenerate_with_feedback
from generation.models import GenerationJob, JobStatus
from generation.services import JobConfigError, format_funnel
from projects.commands import ProjectCommand


class Command(ProjectCommand):
    help = ("Regenerate the rejected children of a procedure (its flowgraph), a flowgraph (its conversation "
            "graph) or a conversation graph (its conversations) with the reviewers' reasons in the prompt.")

    def add_arguments(self, parser) -> None:
        parent = parser.add_mutually_exclusive_group(required=True)
        parent.add_argument("--procedure", type=int)
        parent.add_argument("--flowgraph", type=int)
        parent.add_argument("--graph", type=int, help="a conversation graph id")
        parser.add_argument("--wait", action="store_true")
        parser.add_argument("--timeout", type=float, default=600.0)

    def handle(self, *args, **opts) -> None:
        parent, pk = next((k, opts[o]) for o, k in (("procedure", "procedure"), ("flowgraph", "flowgraph"),
                                                    ("graph", "conversation_graph")) if opts[o] is not None)
        try:
            job, fb = regenerate_with_feedback(parent=parent, parent_id=pk)
        except (FeedbackError, JobConfigError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(fb.text)
        self.stdout.write(f"job {job.pk} queued: regenerating {len(fb.rejected)} rejected children of {parent} {pk}")
        if not opts["wait"]:
            return
        deadline = time.monotonic() + opts["timeout"]
        while not job.is_terminal:
            if time.monotonic() > deadline:
                raise CommandError(f"job {job.pk} still {job.status} after {opts['timeout']:.0f}s")
            time.sleep(0.5)
            job = GenerationJob.objects.get(pk=job.pk)
        self.stdout.write(format_funnel(job))
        if job.status != JobStatus.SUCCEEDED:
            raise CommandError(f"job {job.pk} ended {job.status}" + (f": {job.error}" if job.error else ""))

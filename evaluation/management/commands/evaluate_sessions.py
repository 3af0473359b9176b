"""python manage.py evaluate_sessions --release R --agent A [--limit N] [--max-turns T] [--wait | --inline]

FlowBench's session-level evaluation: a simulated user converses with the agent about each
conversation of the release (the first N with --limit) and a judge counts the goals reached.
R and A are found as by `evaluate`. Without --wait/--inline the run is queued for the worker.
"""
from __future__ import annotations

from django.core.management.base import CommandError

from evaluation import session_services as SV
from evaluation import sessions as SS
from evaluation.management.commands.evaluate import find_agent, find_release, wait_for_run
from evaluation.models import RunStatus
from evaluation.services import EvaluationError
from projects.commands import ProjectCommand


def session_table(report: dict) -> str:
    lines = [f"{'metric':<18} {'value':>8}  {'n/d':>11}  95% CI"]
    for c in SS.metric_cells(report.get("metrics") or {}, unit="%"):
        lines.append(f"{c['label']:<18} {c['value']:>8}  {c['nd']:>11}  {c['ci']}")
    return "\n".join(lines)


class Command(ProjectCommand):
    help = "Evaluate an agent in simulated sessions (FlowBench) on a release and print the session metrics."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--release", required=True)
        parser.add_argument("--agent", required=True)
        parser.add_argument("--limit", type=int, default=None, help="the first N conversations only")
        parser.add_argument("--max-turns", type=int, default=15)
        parser.add_argument("--concurrency", type=int, default=None)
        parser.add_argument("--user-model", default="")
        parser.add_argument("--judge-model", default="")
        parser.add_argument("--wait", action="store_true", help="wait for the Celery worker to finish the run")
        parser.add_argument("--inline", action="store_true", help="run the sessions in this process (no worker)")
        parser.add_argument("--timeout", type=float, default=0, help="--wait: give up after this many seconds")

    def handle(self, *args, **opts) -> None:
        release, agent = find_release(opts["release"]), find_agent(opts["agent"])
        try:
            run = SV.session_run_create(agent=agent, release=release, max_turns=opts["max_turns"], limit=opts["limit"],
                                        concurrency=opts["concurrency"], user_model=opts["user_model"],
                                        judge_model=opts["judge_model"], start=not opts["inline"])
        except EvaluationError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"session run #{run.pk}: {agent.name} on {release}, {run.total} conversations, "
                          f"at most {run.max_turns} user turns")
        if opts["inline"]:
            run = SV.session_run_execute_inline(run=run)
        elif opts["wait"]:
            wait_for_run(run, opts["timeout"], self.stdout.write)
        else:
            self.stdout.write("queued for the worker; follow it on the sessions page or rerun with --wait")
            return
        self.stdout.write(f"session run #{run.pk} {run.status}")
        self.stdout.write(session_table(SV.session_current_report(run)))
        if run.status != RunStatus.SUCCEEDED:
            raise CommandError(f"session run #{run.pk} ended {run.status}: {run.error}")


"""python manage.py evaluate --release R --agent A [--wait | --inline]
   python manage.py evaluate --rejudge RUN [--similarity S] [--threshold T] [--wait | --inline]

R is a release id or "name" / "name@version" (latest version by default); A is an agent id or
name ("gold", "always_reply" and "first_api" name the built-in reference agents). Without
--wait/--inline the run is queued for the Celery worker and the command returns. --rejudge makes a
new run that scores the stored answers of a succeeded run again (no agent calls).
--fail-under METRIC=VALUE, --baseline RESULTS.json, --junit OUT.xml and --json OUT.json apply the
standalone runner's CI gates and outputs to the finished run.

Exit status, as the standalone runner's: 0 the run succeeded and every gate was met; 1 a gate or
the baseline failed; 2 usage (an unknown gate, a baseline from another release, …); 3 the run
failed: the agent could not be reached or answered unreadably for more than --max-error-share of
the tests, the circuit breaker stopped it, or a test got no answer (resume retries it).
"""
from __future__ import annotations

import time

from django.core.management.base import CommandError

from curation.models import Release
from evaluation import metrics as M
from evaluation import run_health as H
from evaluation import services
from evaluation import similarity as S
from evaluation.models import Agent, AgentMode, EvaluationRun, ResultState
from projects.commands import ProjectCommand


def find_release(value: str) -> Release:
    if value.isdigit():
        release = Release.objects.filter(pk=int(value)).first()
    else:
        name, _, version = value.partition("@")
        qs = Release.objects.filter(name=name)
        if version:
            qs = qs.filter(version=int(version))
        release = qs.order_by("-version").first()
    if release is None:
        raise CommandError(f"no release {value!r}", returncode=2)
    return release


def find_agent(value: str) -> Agent:
    services.reference_agents_ensure()
    builtin = {"gold": AgentMode.GOLD, "always_reply": AgentMode.ALWAYS_REPLY, "first_api": AgentMode.FIRST_API}
    if value in builtin:
        return Agent.objects.filter(mode=builtin[value]).order_by("id").first()
    agent = Agent.objects.filter(pk=int(value)).first() if value.isdigit() else Agent.objects.filter(name=value).first()
    if agent is None:
        raise CommandError(f"no agent {value!r}", returncode=2)
    return agent


def wait_for_run(run, timeout: float, write) -> None:
    """Poll a run (turn-level or sessions) until it stops, writing its progress as it changes."""
    deadline = time.monotonic() + timeout if timeout else None
    last = -1
    while True:
        run.refresh_from_db()
        if not run.is_active:
            return
        done = run.results.filter(state=ResultState.DONE).count()
        if done != last:
            write(f"  {done}/{run.total}")
            last = done
        if deadline and time.monotonic() > deadline:
            raise CommandError(f"run #{run.pk} still {run.status} after {timeout} s (is a worker running?)",
                               returncode=3)
        time.sleep(1.0)


class Command(ProjectCommand):
    help = "Evaluate an agent on a release and print the paper's seven metrics."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--release")
        parser.add_argument("--agent")
        parser.add_argument("--rejudge", type=int, metavar="RUN",
                            help="judge the stored answers of this succeeded run again (no agent calls)")
        parser.add_argument("--wait", action="store_true", help="wait for the Celery worker to finish the run")
        parser.add_argument("--inline", action="store_true", help="run the tests in this process (no worker)")
        parser.add_argument("--similarity", choices=S.CHOICES, default=S.AUTO)
        parser.add_argument("--threshold", type=float, default=None)
        parser.add_argument("--comparison", choices=list(M.COMPARISONS), default=None,
                            help="API names and values: exact (default) or lenient (reported as such)")
        parser.add_argument("--trials", type=int, default=1,
                            help="answers per test, for pass^k (an LLM agent needs temperature > 0)")
        parser.add_argument("--max-error-share", default=str(H.DEFAULT_MAX_ERROR_SHARE), metavar="SHARE",
                            help="the run fails when more tests than this share (0..1 or N%%) got no answer or an "
                                 "unreadable one (default 0.1)")
        parser.add_argument("--dst", action="store_true", help="also ask the agent for the dialogue state")
        parser.add_argument("--action-labels", choices=["rules", "model"], default="rules",
                            help="predicted dialogue actions: lexical rules on the answer (default) or asked of "
                                 "the agent's model (ToolDial)")
        parser.add_argument("--concurrency", type=int, default=None)
        parser.add_argument("--timeout", type=float, default=0, help="--wait: give up after this many seconds")
        # CI gates, as in the standalone runner (issue #18): exit 1 when one fails.
        parser.add_argument("--fail-under", action="append", default=[], metavar="METRIC=VALUE",
                            help="fail when METRIC is below VALUE (0..1 or N%%); repeatable")
        parser.add_argument("--baseline", help="a results file (--json): fail on a regression beyond the 95%% interval")
        parser.add_argument("--junit", help="write JUnit XML (one test case per test) here")
        parser.add_argument("--json", help="write the results (metrics, gates, one record per test) here")

    def handle(self, *args, **opts) -> None:
        try:
            limit = H.check_limit(opts["max_error_share"])
        except ValueError as exc:
            raise CommandError(f"--max-error-share: {exc}", returncode=2) from exc
        if opts["rejudge"] is not None:
            if opts["release"] or opts["agent"]:
                raise CommandError("--rejudge takes the release and agent of the run it re-judges", returncode=2)
            source = EvaluationRun.objects.filter(pk=opts["rejudge"]).first()
            if source is None:
                raise CommandError(f"no run #{opts['rejudge']}", returncode=2)
            try:
                run = services.run_rejudge(run=source, similarity=opts["similarity"], threshold=opts["threshold"],
                                           comparison=opts["comparison"], start=not opts["inline"])
            except (services.EvaluationError, S.SimilarityUnavailable) as exc:
                raise CommandError(str(exc), returncode=2) from exc
            self.stdout.write(f"run #{run.pk}: the {run.total} answers of run #{source.pk} judged again, "
                              f"similarity {run.similarity}, threshold {run.threshold}")
        else:
            if not opts["release"] or not opts["agent"]:
                raise CommandError("give --release and --agent (or --rejudge RUN)", returncode=2)
            release, agent = find_release(opts["release"]), find_agent(opts["agent"])
            if opts["baseline"]:
                self.check_baseline(release, opts["baseline"])
            try:
                run = services.run_create(agent=agent, release=release, similarity=opts["similarity"],
                                          threshold=opts["threshold"], concurrency=opts["concurrency"],
                                          comparison=opts["comparison"] or M.EXACT, trials=opts["trials"],
                                          dst=opts["dst"], start=not opts["inline"], max_error_share=limit,
                                          action_labels=opts["action_labels"])
            except (services.EvaluationError, S.SimilarityUnavailable) as exc:
                raise CommandError(str(exc), returncode=2) from exc
            self.stdout.write(f"run #{run.pk}: {agent.name} on {release}, {run.total} tests, "
                              f"similarity {run.similarity}")
        if opts["inline"]:
            run = services.run_execute_inline(run=run)
        elif opts["wait"]:
            wait_for_run(run, opts["timeout"], self.stdout.write)
        else:
            self.stdout.write("queued for the worker; follow it on the evaluation page or rerun with --wait")
            return
        self.print_report(run)
        doc = None
        if opts["fail_under"] or opts["baseline"] or opts["junit"] or opts["json"]:
            doc = self.check_gates(run, opts)  # the files are written for a failed run too
        if run.status != EvaluationRun.Status.SUCCEEDED:
            raise CommandError(f"run #{run.pk} ended {run.status}: {run.error}", returncode=3)
        if doc is not None and not doc["passed"]:
            raise CommandError(f"run #{run.pk}: {sum(not g['passed'] for g in doc['gates'])} gate(s) failed",
                               returncode=1)

    def check_baseline(self, release: Release, path: str) -> None:
        from evaluation.runner import gates

        try:
            gates.check_same_release({"id": release.pk, "name": release.name, "version": release.version,
                                      "content_hash": release.content_hash}, gates.load_baseline(path))
        except gates.GateError as exc:
            raise CommandError(str(exc), returncode=2) from exc

    def check_gates(self, run: EvaluationRun, opts) -> dict:
        from evaluation.run_gates import gate_lines, run_gates
        from evaluation.runner.gates import GateError

        try:
            doc = run_gates(run, fail_under=opts["fail_under"], baseline=opts["baseline"], junit=opts["junit"],
                            json_out=opts["json"])
        except GateError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        for line in gate_lines(doc):
            self.stdout.write(line)
        return doc

    def print_report(self, run: EvaluationRun) -> None:
        report = services.run_current_report(run)
        errors = report.get("errors") or {}
        self.stdout.write(f"run #{run.pk} {run.status}, complete: {'yes' if report.get('complete') else 'no'}; "
                          f"reply similarity: {report['similarity_detail']}, "
                          f"threshold {run.threshold}; API comparison: {report.get('comparison_detail', '?')}; "
                          f"no answer: {errors.get('outages', report.get('unanswered', 0))}, "
                          f"unreadable answers: {errors.get('unreadable', report['unparseable'])}")
        if run.status == EvaluationRun.Status.FAILED:
            self.stdout.write(f"FAILED: {run.error}")
        self.stdout.write(services.metric_table(M.metrics_from_json(report["metrics"])))
        if report.get("unanswered"):
            self.stdout.write(f"INCOMPLETE: {report['unanswered']} test(s) got no answer and count as wrong above; "
                              "over the answered tests only:")
            self.stdout.write(services.metric_table(M.metrics_from_json(report["metrics_answered"])))
        for line in services.extra_report_lines(report):
            self.stdout.write(line)

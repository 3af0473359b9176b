"""Reports of turn-level runs: outcomes, metrics with intervals and breakdowns, progress,
comparisons of runs and of releases (Figure 5), the plain-text Table 2 row."""
from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from curation.models import Release
from curation.releases.services import release_test_rows
from evaluation import metrics as M
from evaluation import run_health as H
from evaluation import similarity as S
from evaluation import trials as T
from evaluation.models import EvaluationRun, ResultState, RunStatus
from evaluation.services.common import BOOTSTRAP_SAMPLES, EvaluationError
from evaluation.services.dialogue import dialogue_sections


def _groups_for(entries: list[tuple[int, int, int, dict]]) -> dict[int, dict[str, list[str]]]:
    """entry pk -> {"noise": [...], "stage": [...]} for the breakdowns."""
    stages = M.stages_by_position((pk, conv, pos) for pk, conv, pos, _ in entries)
    out = {}
    for pk, _conv, _pos, data in entries:
        kinds = [str(k) for k in (data.get("noise_kinds") or []) if k] if isinstance(data, dict) else []
        out[pk] = {"noise": sorted(set(kinds)) or ["no noise"], "stage": [stages[pk]]}
    return out


OUTCOME_COLUMNS = ("entry_id", "trial", "state", "predicted_type", "reply_recalled", "reply_correct", "api_recalled",
                   "api_correct", "params_correct", "correct", "similarity", "error")


def run_trial_outcomes(run: EvaluationRun) -> list[tuple[int, int, M.Outcome]]:
    """(entry pk, trial, outcome) for every answered test, and for every test whose call failed
    (an unanswered outcome: wrong). Once the run has stopped, tests it never reached count as
    unanswered too; while it runs they are simply not there yet."""
    entries = list(release_test_rows(run.release_id))
    groups = _groups_for(entries)
    expected = {pk: (data.get("expected") or {}) for pk, _c, _p, data in entries}
    conv = {pk: c for pk, c, _p, _d in entries}
    missing = [ResultState.FAILED] + ([] if run.is_active else [ResultState.PENDING, ResultState.RUNNING])
    outcomes = []
    for r in run.results.filter(state__in=[ResultState.DONE, *missing]).values(*OUTCOME_COLUMNS):
        pk = r["entry_id"]
        if r["state"] != ResultState.DONE:
            reason = r["error"] or ("the run stopped before this test" if r["state"] != ResultState.FAILED
                                    else "the agent call failed")
            outcome = M.unanswered(expected[pk], reason=reason, conversation_id=conv[pk], groups=groups[pk])
        else:
            outcome = M.Outcome(
                conversation_id=conv[pk], expected_type=expected[pk].get("type"),
                predicted_type=r["predicted_type"], reply_recalled=r["reply_recalled"],
                reply_correct=r["reply_correct"], api_recalled=r["api_recalled"], api_correct=r["api_correct"],
                params_correct=r["params_correct"], correct=r["correct"], similarity=r["similarity"],
                reason=r["error"], groups=groups[pk])
        outcomes.append((pk, r["trial"], outcome))
    return outcomes


def run_outcomes(run: EvaluationRun) -> list[M.Outcome]:
    """The first trial's outcomes (the seven metrics are over one answer per test), failed calls
    included as unanswered (wrong)."""
    return [o for _pk, trial, o in run_trial_outcomes(run) if trial == 0]


def run_report(run: EvaluationRun, *, bootstrap: int = 0) -> dict[str, Any]:
    """The seven metrics over all tests (a failed call counts as wrong) and over the answered
    tests, breakdowns, and the settings that decide what "correct" means (similarity, threshold,
    comparison), so that every page and export that shows the numbers can say how they were made."""
    trial_outcomes = run_trial_outcomes(run)
    outcomes = [o for _pk, trial, o in trial_outcomes if trial == 0]
    answered = M.answered_only(outcomes)
    states = dict(run.results.values_list("state").annotate(n=Count("id")).values_list("state", "n"))
    metrics = M.compute_metrics(outcomes, bootstrap=bootstrap, seed=run.pk or 0)
    unanswered = len(outcomes) - len(answered)
    # Every trial's answers count towards the run's health (evaluation/run_health.py).
    health = H.health_of((o.predicted_type for _pk, _t, o in trial_outcomes), limit=run.max_error_share)
    report = {
        "similarity": run.similarity,
        "similarity_detail": S.describe(run.similarity),
        "threshold": run.threshold,
        "comparison": run.comparison,
        "comparison_detail": M.COMPARISONS.get(run.comparison, run.comparison),
        "evaluated": states.get(ResultState.DONE, 0),
        "failed": states.get(ResultState.FAILED, 0),
        "unanswered": unanswered,
        "complete": unanswered == 0 and not health.failed,
        "unparseable": sum(1 for o in answered if o.predicted_type == M.INVALID),
        "errors": health.to_json(),
        "fail_reason": health.reason(),
        "bootstrap": bootstrap,
        "metrics": M.metrics_to_json(metrics),
        "metrics_answered": M.metrics_to_json(M.compute_metrics(answered, bootstrap=bootstrap, seed=run.pk or 0)),
        "by_noise": {g: M.metrics_to_json(m) for g, m in M.breakdown(outcomes, "noise").items()},
        "by_stage": {g: M.metrics_to_json(m) for g, m in M.breakdown(outcomes, "stage").items()},
    }
    entries_groups = {pk: o.groups for pk, trial, o in trial_outcomes if trial == 0}
    report.update(dialogue_sections(run, entries_groups))
    if run.trials > 1:
        report["trials"] = T.trials_report(trial_outcomes, run.trials, bootstrap=bootstrap, seed=run.pk or 0)
    return report


def run_current_report(run: EvaluationRun) -> dict[str, Any]:
    """The stored report of a finished run, or a live one (no intervals) while it runs."""
    if run.metrics and run.metrics.get("metrics") and not run.is_active:
        return run.metrics
    return run_report(run, bootstrap=0)


def run_progress(run: EvaluationRun) -> dict[str, int]:
    counts = dict(run.results.values_list("state").annotate(n=Count("id")).values_list("state", "n"))
    return {state: counts.get(state, 0) for state in ResultState.values} | {"total": run.total}


def runs_with_progress(queryset):
    """Runs annotated with `evaluated` (results done so far), for lists of active runs."""
    return queryset.annotate(evaluated=Count("results", filter=Q(results__state=ResultState.DONE)))


def runs_compare(runs: list[EvaluationRun]) -> list[dict[str, Any]]:
    rows = []
    for run in runs:
        report = run_current_report(run)
        rows.append({"run": run, "report": report, "metrics": M.metrics_from_json(report.get("metrics", {}))})
    return rows


def runs_differences(runs: list[EvaluationRun], *, bootstrap: int = BOOTSTRAP_SAMPLES) -> list[dict[str, Any]]:
    """Each run after the first against the first (the baseline): metric differences with paired
    bootstrap intervals over the conversations, when both ran on the same release."""
    if len(runs) < 2:
        return []
    base = runs[0]
    base_outcomes = run_outcomes(base)
    out = []
    for run in runs[1:]:
        if run.release_id != base.release_id:
            out.append({"run": run, "differences": None,
                        "why": f"another release ({run.release}); differences are paired on one release"})
            continue
        diffs = M.paired_differences(run_outcomes(run), base_outcomes, bootstrap=bootstrap,
                                     seed=base.pk * 100_003 + run.pk)
        out.append({"run": run, "differences": [diffs[k] for k in M.METRIC_KEYS], "why": ""})
    return out


def latest_runs_by_agent(release: Release) -> dict[int, EvaluationRun]:
    out: dict[int, EvaluationRun] = {}
    for run in (EvaluationRun.objects.filter(release=release, status=RunStatus.SUCCEEDED)
                .select_related("agent").order_by("-finished_at", "-id")):
        out.setdefault(run.agent_id, run)
    return out


def releases_compare(*, release_a: Release, release_b: Release, metric: str = "test_correct") -> dict[str, Any]:
    """Figure 5: one point per agent with a finished run on both releases, and the correlations."""
    if metric not in M.METRIC_LABELS:
        raise EvaluationError(f"unknown metric {metric!r}")
    runs_a, runs_b = latest_runs_by_agent(release_a), latest_runs_by_agent(release_b)
    points = []
    for agent_id in sorted(set(runs_a) & set(runs_b), key=lambda a: runs_a[a].agent.name):
        ma = M.metrics_from_json(run_current_report(runs_a[agent_id]).get("metrics", {})).get(metric)
        mb = M.metrics_from_json(run_current_report(runs_b[agent_id]).get("metrics", {})).get(metric)
        if ma is None or mb is None or ma.value is None or mb.value is None:
            continue
        points.append({"label": runs_a[agent_id].agent.name, "x": 100 * ma.value, "y": 100 * mb.value,
                       "run_a": runs_a[agent_id], "run_b": runs_b[agent_id]})
    xs, ys = [p["x"] for p in points], [p["y"] for p in points]
    return {"points": points, "pearson": M.pearson(xs, ys), "spearman": M.spearman(xs, ys),
            "metric": metric, "metric_label": M.METRIC_LABELS[metric]}


def metric_table(metrics: dict[str, M.Metric]) -> str:
    """The Table 2 row as plain text (the management command prints it)."""
    lines = [f"{'metric':<26} {'value':>7}  {'n/d':>13}  95% CI"]
    for key in M.METRIC_KEYS:
        m = metrics.get(key)
        if m is None:
            continue
        value = f"{m.percent:6.1f}%" if m.value is not None else "     –"
        ci = (f"[{100 * m.ci_low:.1f}, {100 * m.ci_high:.1f}]" if m.ci_low is not None and m.ci_high is not None
              else "")
        lines.append(f"{m.label:<26} {value:>7}  {m.numerator:>6}/{m.denominator:<6}  {ci}")
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def extra_report_lines(report: dict[str, Any]) -> list[str]:
    """Plain-text lines for the report sections beyond Table 2 (repeated trials, actions, state)."""
    lines: list[str] = []
    actions = report.get("actions")
    if actions and actions["total"]:
        lines.append(f"action prediction accuracy: {_pct(actions['accuracy'])} ({actions['correct']}/{actions['total']}); "
                     f"labels: {actions.get('labels_from_detail') or 'lexical rules on the agent answer'}")
    dst = report.get("dst")
    if dst:
        lines.append(f"dialogue state: joint goal accuracy {_pct(dst['joint_goal_accuracy'])} "
                     f"({dst['joint']}/{dst['total']}), slot F1 {_pct(dst['slot_f1'])}")
    trials = report.get("trials")
    if trials:
        lines.append(f"repeated trials: {trials['trials']} per test (pass^k: all k succeed; pass@k: one does)")
        for key, m in trials["metrics"].items():
            cells = "  ".join(f"^{r['k']} {_pct(r['pass_hat_k'])} @{r['k']} {_pct(r['pass_at_k'])}" for r in m["rows"])
            lines.append(f"  {m['label']:<26} ({m['level']}s) {cells}")
    return lines

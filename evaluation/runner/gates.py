"""CI gates on an evaluation: absolute thresholds (--fail-under) and regressions against a
baseline results file (--baseline). Pure Python; `manage.py evaluate` uses the same functions.

A metric regresses when it is worse than the baseline beyond the 95 % interval: with per-test
records on both sides, the paired bootstrap interval of (current − baseline) over the shared
conversations lies entirely below zero; without them (a baseline holding only metrics), the
current value lies below the baseline's own 95 % interval.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evaluation import metrics as M
from evaluation.runner.core import outcome_of


class GateError(ValueError):
    """A gate that cannot be understood (bad metric name, value or baseline file)."""


def parse_threshold(text: str) -> tuple[str, float]:
    """"test_correct=0.6" or "test_correct=60%" -> ("test_correct", 0.6)."""
    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key or not value:
        raise GateError(f"--fail-under {text!r}: write METRIC=VALUE, e.g. test_correct=0.6 or test_correct=60%")
    if key not in M.METRIC_LABELS:
        raise GateError(f"--fail-under {text!r}: unknown metric {key!r}; one of {', '.join(M.METRIC_KEYS)}")
    percent = value.endswith("%")
    try:
        number = float(value.rstrip("%"))
    except ValueError:
        raise GateError(f"--fail-under {text!r}: {value!r} is not a number") from None
    if percent:
        number /= 100.0
    if not 0.0 <= number <= 1.0:
        raise GateError(f"--fail-under {text!r}: the value must lie in 0..1 (or 0%..100%)")
    return key, number


def check_thresholds(metrics: dict[str, Any], thresholds: list[tuple[str, float]]) -> list[dict[str, Any]]:
    gates = []
    table = M.metrics_from_json(metrics)
    for key, floor in thresholds:
        m = table.get(key)
        value = m.value if m else None
        name = f"{key} >= {floor:.4g}"
        if value is None:
            gates.append({"name": name, "kind": "threshold", "passed": False,
                          "message": f"{M.METRIC_LABELS[key]} has no tests to measure it on"})
            continue
        passed = value >= floor
        gates.append({"name": name, "kind": "threshold", "passed": passed, "metric": key, "value": value,
                      "message": f"{M.METRIC_LABELS[key]} {100 * value:.1f}% ({m.numerator}/{m.denominator}) "
                                 f"{'>=' if passed else '<'} {100 * floor:.1f}%"})
    return gates


def load_baseline(path: str | Path) -> dict[str, Any]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise GateError(f"--baseline {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise GateError(f"--baseline {path}: not a JSON results file ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("metrics"), dict):
        raise GateError(f"--baseline {path}: field 'metrics' is missing (give a file written by --json)")
    return doc


def _label(release: dict[str, Any]) -> str:
    name = f"{release.get('name', 'release')}@{release['version']}" if release.get("version") is not None \
        else str(release.get("name") or release.get("label") or "a release file")
    ids = [f"id {release['id']}" if release.get("id") is not None else "",
           f"content hash {str(release['content_hash'])[:12]}…" if release.get("content_hash") else ""]
    return name + (f" ({', '.join(i for i in ids if i)})" if any(ids) else "")


def check_same_release(current: dict[str, Any], baseline: dict[str, Any], where: str = "--baseline") -> None:
    """Refuse a baseline from another release: the release id and the content hash must agree
    where both sides carry them (a file without a header: the hash of its test lines)."""
    base = baseline.get("release")
    if not isinstance(base, dict):
        raise GateError(f"{where}: the file names no release (write it with --json of this version); it cannot "
                        "be matched to this release")
    compared = False
    for key in ("id", "content_hash", "tests_sha256"):
        mine, theirs = current.get(key), base.get(key)
        if mine in (None, "") or theirs in (None, ""):
            continue
        if key == "tests_sha256" and compared:
            continue  # the id and content hash decide; the file's bytes may differ between exports
        compared = True
        if str(mine) != str(theirs):
            raise GateError(f"{where}: the baseline is from {_label(base)}, not {_label(current)}: results of "
                            "another release cannot be compared")
    if not compared:
        raise GateError(f"{where}: the baseline carries no release id or content hash to match "
                        f"{_label(current)} against")


def check_baseline(records: list[dict[str, Any]], metrics: dict[str, Any], baseline: dict[str, Any], *,
                   bootstrap: int = 1000, seed: int = 0) -> list[dict[str, Any]]:
    """Regression gates against a baseline of the same release (check_same_release first). Only
    the first trial of either side is compared, as the seven metrics are."""
    current = M.metrics_from_json(metrics)
    base = M.metrics_from_json(baseline["metrics"])
    gates = []
    records = [r for r in records if not r.get("trial")]
    base_records = baseline.get("tests")
    if isinstance(base_records, list):
        base_records = [r for r in base_records if not (isinstance(r, dict) and r.get("trial"))]
    if isinstance(base_records, list) and base_records and records:
        try:
            base_outcomes = [outcome_of(r) for r in base_records]
        except (KeyError, TypeError) as exc:
            raise GateError(f"--baseline: a test record lacks field {exc}") from None
        diffs = M.paired_differences([outcome_of(r) for r in records], base_outcomes, bootstrap=bootstrap, seed=seed)
        for key in M.METRIC_KEYS:
            d = diffs[key]
            if d.diff is None or base.get(key) is None or base[key].value is None:
                continue
            worse = d.ci_high is not None and d.ci_high < 0
            ci = (f" [{100 * d.ci_low:+.1f}, {100 * d.ci_high:+.1f}]" if d.ci_low is not None
                  and d.ci_high is not None else "")
            gates.append({"name": f"{key} not worse than baseline", "kind": "baseline", "passed": not worse,
                          "metric": key, "difference": d.diff, "ci_low": d.ci_low, "ci_high": d.ci_high,
                          "message": f"{M.METRIC_LABELS[key]} {100 * d.diff:+.1f} points vs baseline, 95% CI{ci} "
                                     f"over {d.conversations} shared conversations"
                                     + ("; worse beyond the interval" if worse else "")})
        return gates
    for key in M.METRIC_KEYS:
        b, c = base.get(key), current.get(key)
        if b is None or c is None or b.value is None or c.value is None:
            continue
        low = b.ci_low if b.ci_low is not None else b.value
        worse = c.value < low
        gates.append({"name": f"{key} not worse than baseline", "kind": "baseline", "passed": not worse,
                      "metric": key, "value": c.value, "baseline": b.value, "baseline_ci_low": low,
                      "message": f"{M.METRIC_LABELS[key]} {100 * c.value:.1f}% vs baseline {100 * b.value:.1f}% "
                                 f"(95% CI lower bound {100 * low:.1f}%)" + ("; worse" if worse else "")})
    return gates

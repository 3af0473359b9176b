"""The paper's seven evaluation dimensions (§4.3), confidence intervals, breakdowns, correlations.

Pure functions on plain data: no Django, no model rows. A test outcome is an :class:`Outcome`;
:func:`judge` turns an expected output and a predicted action into one, and
:func:`compute_metrics` aggregates outcomes into numerators and denominators:

=======================  ==============================================  =======================
metric                   denominator                                     numerator
=======================  ==============================================  =======================
reply recall             tests whose expected action is a reply          … where the agent replied
correct reply            tests where expected and predicted are replies  … with similarity ≥ threshold
API recall               tests whose expected action is an API call      … where the agent called an API
correct API              tests where expected and predicted are API calls … with the expected API name
correct API parameters   tests where the agent called the expected API   … with the expected parameters
test correctness         all tests                                       … fully correct
conversation correctness conversations                                   … whose tests are all correct
=======================  ==============================================  =======================

A test whose agent call failed (no answer at all) is an :func:`unanswered` outcome: it enters every
denominator its expected type enters and no numerator, so it counts as wrong and its conversation
is not correct. :func:`answered_only` gives the same figures over the answered tests alone.

The action types come from evaluation/reader.py (the one answer reader); calls are compared by
evaluation/comparison.py (exact by JSON type and value by default, lenient as a named option);
intervals come from evaluation/intervals.py. Every wrong outcome carries its reason (which
parameter differed, which API was called instead). docs/metrics.md has each rule next to the
paper's wording; tests/evaluation/reference_metrics.py is an independent second implementation.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from evaluation.comparison import (  # noqa: F401 - re-exported: the rules live there
    COMPARISONS,
    EXACT,
    LENIENT,
    names_match,
    normalise_key,
    normalise_name,
    normalise_value,
    param_differences,
    params_match,
    same_value,
)
from evaluation.correlation import pearson, ranks, spearman  # noqa: F401 - re-exported
from evaluation.intervals import Difference, bootstrap_intervals, paired_bootstrap, percentile  # noqa: F401
from evaluation.reader import API_CALL, INVALID, REPLY  # noqa: F401 - the action types

FAILED = "failed"  # predicted_type of a test the agent never answered (its call failed)


METRICS: list[tuple[str, str]] = [
    ("reply_recall", "Reply recall"),
    ("reply_correct", "Correct reply"),
    ("api_recall", "API recall"),
    ("api_correct", "Correct API"),
    ("params_correct", "Correct API parameters"),
    ("test_correct", "Test correctness"),
    ("conversation_correct", "Conversation correctness"),
]
METRIC_LABELS = dict(METRICS)
METRIC_KEYS = [k for k, _ in METRICS]


@dataclass
class Outcome:
    """The judged result of one test."""

    conversation_id: Any
    expected_type: str
    predicted_type: str
    reply_recalled: bool = False
    reply_correct: bool = False
    api_recalled: bool = False
    api_correct: bool = False
    params_correct: bool = False
    correct: bool = False
    similarity: float | None = None
    reason: str = ""
    groups: dict[str, list[str]] = field(default_factory=dict)  # breakdown key -> group names

    @property
    def answered(self) -> bool:
        return self.predicted_type != FAILED

    def counts(self) -> dict[str, tuple[int, int]]:
        """(numerator, denominator) contributions of this test to each test-level metric."""
        is_reply = self.expected_type == REPLY
        is_api = self.expected_type == API_CALL
        return {
            "reply_recall": (int(is_reply and self.reply_recalled), int(is_reply)),
            "reply_correct": (int(self.reply_recalled and self.reply_correct), int(self.reply_recalled)),
            "api_recall": (int(is_api and self.api_recalled), int(is_api)),
            "api_correct": (int(self.api_recalled and self.api_correct), int(self.api_recalled)),
            "params_correct": (int(self.api_correct and self.params_correct), int(self.api_correct)),
            "test_correct": (int(self.correct), 1),
        }


@dataclass
class Metric:
    key: str
    label: str
    numerator: int
    denominator: int
    ci_low: float | None = None
    ci_high: float | None = None

    @property
    def value(self) -> float | None:
        return self.numerator / self.denominator if self.denominator else None

    @property
    def percent(self) -> float | None:
        v = self.value
        return None if v is None else 100.0 * v

    @property
    def ci_percent(self) -> tuple[float, float] | None:
        if self.ci_low is None or self.ci_high is None:
            return None
        return 100.0 * self.ci_low, 100.0 * self.ci_high

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["value"] = self.value
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Metric":
        return cls(d["key"], d.get("label") or METRIC_LABELS.get(d["key"], d["key"]), int(d["numerator"]),
                   int(d["denominator"]), d.get("ci_low"), d.get("ci_high"))


# --------------------------------------------------------------------------- judging


def judge(expected: dict[str, Any], action: dict[str, Any], *, similarity: float | None = None,
          threshold: float = 0.55, conversation_id: Any = None,
          groups: dict[str, list[str]] | None = None, comparison: str = EXACT) -> Outcome:
    """Judge one predicted action against the expected one.

    `expected` is ``{"type": "reply", "content"}`` or ``{"type": "api_call", "name", "parameters"}``;
    `action` is a canonical action of evaluation/reader.py (``{"type": "invalid", "reason"}`` is
    wrong on every dimension it enters). `similarity` is the reply similarity, needed only when
    both are replies. `comparison` is :data:`EXACT` or :data:`LENIENT`. The outcome's reason says
    why a wrong test is wrong, followed by the reader's note, if any.
    """
    etype = expected.get("type")
    ptype = action.get("type") if action.get("type") in (REPLY, API_CALL) else INVALID
    out = Outcome(conversation_id=conversation_id, expected_type=etype, predicted_type=ptype,
                  groups=dict(groups or {}))
    why = ""
    if etype == REPLY:
        out.reply_recalled = ptype == REPLY
        if out.reply_recalled:
            if similarity is None:
                raise ValueError("a similarity is needed to judge a reply against a reply")
            out.similarity = float(similarity)
            out.reply_correct = out.similarity >= threshold
            if not out.reply_correct:
                why = f"reply similarity {out.similarity:.3f} < {threshold:g}"
        elif ptype == API_CALL:
            why = f"a call to {action.get('name')} where a reply was expected"
        out.correct = out.reply_correct
    elif etype == API_CALL:
        out.api_recalled = ptype == API_CALL
        name = expected.get("name")
        if out.api_recalled:
            out.api_correct = names_match(name, action.get("name"), comparison)
            if out.api_correct:
                diff = param_differences(expected.get("parameters"), action.get("parameters"), comparison)
                out.params_correct = not diff
                if diff:
                    why = f"parameters of {name}: {diff.describe()}"
            else:
                why = f"called {action.get('name')} instead of {name}"
        elif ptype == REPLY:
            why = f"a reply where a call to {name} was expected"
        out.correct = out.params_correct
    else:
        raise ValueError(f"unknown expected type {etype!r}")
    if ptype == INVALID:
        why = str(action.get("reason") or "the answer could not be read")
    note = str(action.get("note") or "")
    out.reason = "; ".join(part for part in (why, note) if part)
    return out


def unanswered(expected: dict[str, Any], *, reason: str = "the agent call failed", conversation_id: Any = None,
               groups: dict[str, list[str]] | None = None) -> Outcome:
    """A test the agent never answered: wrong on every dimension its expected type enters."""
    etype = expected.get("type")
    if etype not in (REPLY, API_CALL):
        raise ValueError(f"unknown expected type {etype!r}")
    return Outcome(conversation_id=conversation_id, expected_type=etype, predicted_type=FAILED,
                   reason=reason or "the agent call failed", groups=dict(groups or {}))


def answered_only(outcomes: Iterable[Outcome]) -> list[Outcome]:
    """The outcomes of answered tests: the second figure a report shows when calls failed."""
    return [o for o in outcomes if o.answered]


# --------------------------------------------------------------------------- aggregation


def _conversation_rows(outcomes: Iterable[Outcome]) -> dict[Any, list[int]]:
    """conversation id -> summed (num, den) per test metric, then (all correct, 1)."""
    keys = METRIC_KEYS[:-1]
    convs: dict[Any, list[int]] = {}
    for o in outcomes:
        row = convs.setdefault(o.conversation_id, [0] * (2 * len(keys)) + [1, 1])
        for i, (num, den) in enumerate(o.counts()[k] for k in keys):
            row[2 * i] += num
            row[2 * i + 1] += den
        if not o.correct:
            row[-2] = 0
    return convs


def _conversation_table(outcomes: Iterable[Outcome]) -> list[list[int]]:
    return list(_conversation_rows(outcomes).values())


def _metrics_from_rows(rows: list[list[int]]) -> dict[str, tuple[int, int]]:
    totals = [sum(col) for col in zip(*rows)] if rows else [0] * (2 * len(METRIC_KEYS))
    return {k: (totals[2 * i], totals[2 * i + 1]) for i, k in enumerate(METRIC_KEYS)}


def compute_metrics(outcomes: Iterable[Outcome], *, bootstrap: int = 0, seed: int = 0,
                    level: float = 0.95) -> dict[str, Metric]:
    """The seven metrics with numerators and denominators; with `bootstrap` > 0, percentile
    confidence intervals from resampling whole conversations (tests of one conversation are
    not independent)."""
    rows = _conversation_table(outcomes)
    counts = _metrics_from_rows(rows)
    result = {k: Metric(k, METRIC_LABELS[k], *counts[k]) for k in METRIC_KEYS}
    if bootstrap and rows:
        intervals = bootstrap_intervals(rows, bootstrap, METRIC_KEYS, seed=seed, level=level)
        for k, (lo, hi) in intervals.items():
            result[k].ci_low, result[k].ci_high = lo, hi
    return result


def paired_differences(a: Iterable[Outcome], b: Iterable[Outcome], *, bootstrap: int = 1000, seed: int = 0,
                       level: float = 0.95) -> dict[str, Difference]:
    """A − B for each metric over the conversations both runs judged (two agents on one release),
    with paired bootstrap intervals (evaluation/intervals.py)."""
    return paired_bootstrap(_conversation_rows(a), _conversation_rows(b), METRIC_KEYS, METRIC_LABELS,
                            bootstrap=bootstrap, seed=seed, level=level)


def breakdown(outcomes: list[Outcome], key: str) -> dict[str, dict[str, Metric]]:
    """Metrics per group of `key` (a test may sit in several groups, e.g. two noise kinds)."""
    groups: dict[str, list[Outcome]] = {}
    for o in outcomes:
        for g in o.groups.get(key) or []:
            groups.setdefault(g, []).append(o)
    return {g: compute_metrics(items) for g, items in sorted(groups.items())}


STAGES = ("early", "middle", "late")


def stage_of(rank: int, count: int) -> str:
    """Which third of its conversation's tests a test falls in (rank is 0-based)."""
    if count <= 1:
        return "early"
    return STAGES[min(2, (3 * rank) // count)]


def stages_by_position(items: Iterable[tuple[Any, Any, int]]) -> dict[Any, str]:
    """``[(test key, conversation id, position)] -> {test key: stage}``."""
    convs: dict[Any, list[tuple[int, Any]]] = {}
    for key, conv, pos in items:
        convs.setdefault(conv, []).append((pos, key))
    out = {}
    for members in convs.values():
        members.sort(key=lambda t: (t[0], str(t[1])))
        for rank, (_, key) in enumerate(members):
            out[key] = stage_of(rank, len(members))
    return out


def metrics_to_json(metrics: dict[str, Metric]) -> dict[str, dict[str, Any]]:
    return {k: m.to_dict() for k, m in metrics.items()}


def metrics_from_json(data: dict[str, Any]) -> dict[str, Metric]:
    return {k: Metric.from_dict(v) for k, v in (data or {}).items() if k in METRIC_LABELS}


Judge = Callable[[dict[str, Any], dict[str, Any]], Outcome]

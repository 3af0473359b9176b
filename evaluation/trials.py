"""Repeated trials: pass^k and pass@k (τ-bench), per metric, over tests and over conversations.

Pure functions on plain data (no Django). A run that repeats each test n times gives, for each
test and each trial, an :class:`evaluation.metrics.Outcome`. For one item (a test, or a
conversation) with c successes in n trials:

* pass^k = C(c, k) / C(n, k): the chance that k trials drawn without replacement all succeed
  (the item is reliably solved);
* pass@k = 1 − C(n − c, k) / C(n, k): the chance that at least one of k trials succeeds.

Both are averaged over the items; a 95 % interval comes from resampling items (bootstrap).

The seven metrics have nested denominators (correct API is counted over the tests where the agent
called an API, and that set changes from trial to trial), so each metric is read here in its
*unconditional* form over a fixed population: a test succeeds on "correct API" when an API call
was expected and the agent called that API, whatever it did in other trials. docs/metrics.md.
"""
from __future__ import annotations

import random
from collections.abc import Iterable
from math import comb
from typing import Any

from evaluation.metrics import API_CALL, REPLY, Outcome, percentile

# metric key -> (who is in the population, when a test succeeds); unconditional forms.
TEST_METRICS: dict[str, tuple[str, Any]] = {
    "reply_recall": (REPLY, lambda o: o.reply_recalled),
    "reply_correct": (REPLY, lambda o: o.reply_recalled and o.reply_correct),
    "api_recall": (API_CALL, lambda o: o.api_recalled),
    "api_correct": (API_CALL, lambda o: o.api_recalled and o.api_correct),
    "params_correct": (API_CALL, lambda o: o.api_correct and o.params_correct),
    "test_correct": ("", lambda o: o.correct),
}
LABELS = {
    "reply_recall": "Reply recall", "reply_correct": "Correct reply", "api_recall": "API recall",
    "api_correct": "Correct API", "params_correct": "Correct API parameters", "test_correct": "Test correctness",
    "conversation_correct": "Conversation correctness",
}


def pass_hat_k(successes: int, trials: int, k: int) -> float:
    """C(c, k) / C(n, k)."""
    if not 1 <= k <= trials:
        raise ValueError(f"k={k} must be between 1 and the number of trials ({trials})")
    return comb(successes, k) / comb(trials, k)


def pass_at_k(successes: int, trials: int, k: int) -> float:
    """1 − C(n − c, k) / C(n, k)."""
    if not 1 <= k <= trials:
        raise ValueError(f"k={k} must be between 1 and the number of trials ({trials})")
    return 1.0 - comb(trials - successes, k) / comb(trials, k)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _interval(items: list[tuple[int, int]], k: int, fn, bootstrap: int, rng: random.Random,
              level: float) -> tuple[float | None, float | None]:
    if not bootstrap or not items:
        return None, None
    samples = []
    for _ in range(bootstrap):
        pick = rng.choices(items, k=len(items))
        samples.append(sum(fn(c, n, k) for c, n in pick) / len(pick))
    samples.sort()
    alpha = (1 - level) / 2
    return percentile(samples, alpha), percentile(samples, 1 - alpha)


def summarise(items: list[tuple[int, int]], trials: int, *, bootstrap: int = 0, seed: int = 0,
              level: float = 0.95) -> list[dict[str, Any]]:
    """[(successes, trials)] of each item -> one row per k: pass^k, pass@k and their intervals."""
    rng = random.Random(seed)
    rows = []
    for k in range(1, trials + 1):
        usable = [(c, n) for c, n in items if n >= k]
        hat = _mean([pass_hat_k(c, n, k) for c, n in usable])
        at = _mean([pass_at_k(c, n, k) for c, n in usable])
        hat_lo, hat_hi = _interval(usable, k, pass_hat_k, bootstrap, rng, level)
        at_lo, at_hi = _interval(usable, k, pass_at_k, bootstrap, rng, level)
        rows.append({"k": k, "items": len(usable), "pass_hat_k": hat, "pass_hat_k_ci": [hat_lo, hat_hi],
                     "pass_at_k": at, "pass_at_k_ci": [at_lo, at_hi]})
    return rows


def successes_by_test(trial_outcomes: Iterable[tuple[Any, int, Outcome]]) -> dict[str, dict[Any, tuple[int, int]]]:
    """[(test key, trial, outcome)] -> metric -> test key -> (successes, trials in its population)."""
    out: dict[str, dict[Any, list[int]]] = {m: {} for m in TEST_METRICS}
    for key, _trial, o in trial_outcomes:
        for metric, (population, success) in TEST_METRICS.items():
            if population and o.expected_type != population:
                continue
            row = out[metric].setdefault(key, [0, 0])
            row[0] += int(bool(success(o)))
            row[1] += 1
    return {m: {k: (c, n) for k, (c, n) in items.items()} for m, items in out.items()}


def successes_by_conversation(trial_outcomes: Iterable[tuple[Any, int, Outcome]]) -> dict[Any, tuple[int, int]]:
    """A conversation succeeds in a trial when every one of its tests is correct in that trial."""
    per: dict[Any, dict[int, bool]] = {}
    for _key, trial, o in trial_outcomes:
        trials = per.setdefault(o.conversation_id, {})
        trials[trial] = trials.get(trial, True) and o.correct
    return {conv: (sum(ok.values()), len(ok)) for conv, ok in per.items()}


def trials_report(trial_outcomes: list[tuple[Any, int, Outcome]], trials: int, *, bootstrap: int = 0,
                  seed: int = 0) -> dict[str, Any]:
    """pass^k and pass@k for k = 1..trials, per metric over tests and per conversation, plus the
    tests whose outcome varied between trials (test key, successes, trials) for test correctness."""
    by_test = successes_by_test(trial_outcomes)
    metrics = {}
    for i, (metric, items) in enumerate(by_test.items()):
        metrics[metric] = {"label": LABELS[metric], "level": "test",
                           "rows": summarise(list(items.values()), trials, bootstrap=bootstrap, seed=seed + i)}
    convs = successes_by_conversation(trial_outcomes)
    metrics["conversation_correct"] = {"label": LABELS["conversation_correct"], "level": "conversation",
                                       "rows": summarise(list(convs.values()), trials, bootstrap=bootstrap,
                                                         seed=seed + 99)}
    varied = sorted(((key, c, n) for key, (c, n) in by_test["test_correct"].items() if 0 < c < n),
                    key=lambda t: (t[1] / t[2], str(t[0])))
    return {"trials": trials, "metrics": metrics,
            "varied_tests": [{"test": key, "successes": c, "trials": n} for key, c, n in varied]}

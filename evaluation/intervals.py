"""Bootstrap intervals for the seven metrics: percentile intervals from resampling whole
conversations (the tests of one conversation are not independent), and paired differences of two
runs on the same conversations. Pure, no Django.

Both work on *conversation rows*: per conversation, the summed (numerator, denominator) of each
metric, in the order of `keys` (evaluation.metrics builds them from outcomes).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    pos = q * (len(sorted_values) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def bootstrap_intervals(rows: list[list[int]], n: int, keys: list[str], *, seed: int = 0,
                        level: float = 0.95) -> dict[str, tuple[float | None, float | None]]:
    rng = random.Random(seed)
    k = len(rows)
    columns = [list(col) for col in zip(*rows)]
    population = range(k)
    samples: dict[str, list[float]] = {key: [] for key in keys}
    for _ in range(n):
        idx = rng.choices(population, k=k)
        for i, key in enumerate(keys):
            den = sum(map(columns[2 * i + 1].__getitem__, idx))
            if den:
                samples[key].append(sum(map(columns[2 * i].__getitem__, idx)) / den)
    alpha = (1 - level) / 2
    out: dict[str, tuple[float | None, float | None]] = {}
    for key, values in samples.items():
        values.sort()
        out[key] = (percentile(values, alpha), percentile(values, 1 - alpha)) if values else (None, None)
    return out


@dataclass
class Difference:
    """Metric of run A minus the same metric of run B on the same conversations, with a paired
    bootstrap percentile interval (both runs resampled with the same conversations)."""

    key: str
    label: str
    diff: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    conversations: int = 0

    @property
    def significant(self) -> bool:
        """The interval excludes zero."""
        return self.ci_low is not None and self.ci_high is not None and (self.ci_low > 0 or self.ci_high < 0)


def _ratio(columns: list[list[int]], i: int, idx) -> float | None:
    den = sum(map(columns[2 * i + 1].__getitem__, idx))
    return sum(map(columns[2 * i].__getitem__, idx)) / den if den else None


def paired_bootstrap(rows_a: dict[Any, list[int]], rows_b: dict[Any, list[int]], keys: list[str],
                     labels: dict[str, str], *, bootstrap: int = 1000, seed: int = 0,
                     level: float = 0.95) -> dict[str, Difference]:
    """A − B for each metric over the conversations both have; resampling whole conversations
    once for both keeps the pairing, so the interval reflects how differently the two did on the
    same tests, not the spread of each alone."""
    shared = sorted(set(rows_a) & set(rows_b), key=str)
    k = len(shared)
    cols_a = [list(col) for col in zip(*(rows_a[c] for c in shared))] if k else []
    cols_b = [list(col) for col in zip(*(rows_b[c] for c in shared))] if k else []
    everything = range(k)
    out: dict[str, Difference] = {}
    for i, key in enumerate(keys):
        va = _ratio(cols_a, i, everything) if k else None
        vb = _ratio(cols_b, i, everything) if k else None
        out[key] = Difference(key, labels[key], None if va is None or vb is None else va - vb, conversations=k)
    if not (bootstrap and k):
        return out
    rng = random.Random(seed)
    samples: dict[str, list[float]] = {key: [] for key in keys}
    for _ in range(bootstrap):
        idx = rng.choices(everything, k=k)
        for i, key in enumerate(keys):
            va, vb = _ratio(cols_a, i, idx), _ratio(cols_b, i, idx)
            if va is not None and vb is not None:
                samples[key].append(va - vb)
    alpha = (1 - level) / 2
    for key, values in samples.items():
        if values and out[key].diff is not None:
            values.sort()
            out[key].ci_low, out[key].ci_high = percentile(values, alpha), percentile(values, 1 - alpha)
    return out

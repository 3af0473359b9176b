"""Inter-annotator agreement on nominal labels: percent agreement, Cohen's κ, Krippendorff's α.

Pure functions on plain data, no Django. Each returns an :class:`Agreement` with the value (or
``None``), the counts behind it, and a plain-language explanation whenever the value is undefined,
so a page never shows a bare "nan".
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Agreement:
    value: float | None
    n: int  # units (items) that entered the computation
    counts: dict[str, Any] = field(default_factory=dict)
    explanation: str = ""

    @property
    def defined(self) -> bool:
        return self.value is not None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _key(pair: tuple[Hashable, Hashable]) -> str:
    return f"{pair[0]}|{pair[1]}"


# Each coefficient has a form over counts (what SQL aggregation returns: a table of label pairs,
# a histogram of per-item label compositions) and the plain form over rows, which only tallies
# the rows and calls it, so both always give the same figures.

def percent_agreement(pairs: Sequence[tuple[Hashable, Hashable]]) -> Agreement:
    """Share of items on which both raters gave the same label."""
    return percent_from_counts(sum(1 for a, b in pairs if a == b), len(pairs))


def percent_from_counts(same: int, n: int) -> Agreement:
    counts = {"agree": same, "disagree": n - same}
    if n == 0:
        return Agreement(None, 0, counts, "No item has been reviewed by both annotators yet.")
    return Agreement(same / n, n, counts)


def cohen_kappa(pairs: Sequence[tuple[Hashable, Hashable]]) -> Agreement:
    """Cohen's κ for two raters: (p_o − p_e) / (1 − p_e), with p_e from each rater's own marginals."""
    return cohen_kappa_table(Counter(pairs))


def cohen_kappa_table(table: Mapping[tuple[Hashable, Hashable], int]) -> Agreement:
    """Cohen's κ from a contingency table {(first rater's label, second's): items}."""
    table = {k: v for k, v in table.items() if v}
    n = sum(table.values())
    counts: dict[str, Any] = {"table": {_key(k): v for k, v in sorted(table.items(), key=lambda kv: str(kv[0]))}}
    if n == 0:
        return Agreement(None, 0, counts, "No item has been reviewed by both annotators yet.")
    first: Counter = Counter()
    second: Counter = Counter()
    for (a, b), v in table.items():
        first[a] += v
        second[b] += v
    p_o = sum(v for (a, b), v in table.items() if a == b) / n
    p_e = sum(first[c] * second[c] for c in set(first) | set(second)) / (n * n)
    counts.update({"p_observed": p_o, "p_expected": p_e})
    if p_e >= 1.0:
        label = next(iter(first))
        return Agreement(
            None, n, counts,
            f"Both annotators gave every item the same label ({label}), so agreement expected by chance "
            "is 100% and κ divides by zero. Percent agreement is the meaningful figure here.",
        )
    return Agreement((p_o - p_e) / (1 - p_e), n, counts)


Composition = tuple[tuple[Hashable, int], ...]  # one item's labels as sorted (label, how many) pairs


def composition(labels: Iterable[Hashable]) -> Composition:
    return tuple(sorted(((k, v) for k, v in Counter(labels).items() if v), key=lambda kv: str(kv[0])))


def krippendorff_alpha_nominal(units: Iterable[Sequence[Hashable]]) -> Agreement:
    """Krippendorff's α for nominal data, any number of raters, missing values allowed.

    ``units`` holds, per item, the labels it received (one per rater who labelled it). Items with
    fewer than two labels are not pairable and are left out, as the coefficient prescribes.
    α = 1 − (n − 1) · Σ_{c≠k} o_ck / Σ_{c≠k} n_c · n_k, with o the coincidence matrix.
    """
    return krippendorff_alpha_compositions(Counter(composition(labels) for labels in units))


def krippendorff_alpha_compositions(units: Mapping[Composition, int]) -> Agreement:
    """Krippendorff's α from {composition of one item's labels: how many items have it}.

    An item with m labels, n_c of them c, adds n_c·(n_c − 1)/(m − 1) to o_cc and n_c·n_k/(m − 1)
    to o_ck: the same coincidence matrix as counting every ordered pair of its labels.
    """
    coincidence: Counter = Counter()
    pairable_units = 0
    for comp, weight in units.items():
        m = sum(k for _, k in comp)
        if m < 2 or not weight:
            continue
        pairable_units += weight
        for c, n_c in comp:
            for k, n_k in comp:
                ordered = n_c * (n_c - 1) if c == k else n_c * n_k
                if ordered:
                    coincidence[(c, k)] += weight * ordered / (m - 1)
    n_c: Counter = Counter()
    for (c, _k), v in coincidence.items():
        n_c[c] += v
    n = sum(n_c.values())
    counts: dict[str, Any] = {
        "pairable_values": round(n, 6),
        "coincidence": {_key(k): round(v, 6) for k, v in sorted(coincidence.items(), key=lambda kv: str(kv[0]))},
        "label_totals": {str(c): round(v, 6) for c, v in sorted(n_c.items(), key=lambda kv: str(kv[0]))},
    }
    if pairable_units == 0:
        return Agreement(None, 0, counts, "No item has at least two reviews yet, so nothing can be compared.")
    observed = sum(v for (c, k), v in coincidence.items() if c != k)
    expected = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k)
    if expected == 0:
        label = next(iter(n_c))
        return Agreement(
            None, pairable_units, counts,
            f"Every review so far gave the same label ({label}): with no variation at all, "
            "disagreement expected by chance is zero and α is undefined.",
        )
    return Agreement(1 - (n - 1) * observed / expected, pairable_units, counts)

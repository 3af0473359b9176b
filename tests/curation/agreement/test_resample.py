"""The analytics page's bootstrap over item types (curation.agreement.resample) draws from the same
distribution as resampling items one by one (issue #31: the page must stay fast)."""
from __future__ import annotations

import math
import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from curation.agreement.analytics import _alpha, _kappa, bootstrap, type_bootstrap
from curation.agreement.resample import binomial, multinomial


def _pmf(n, p, k):
    return math.comb(n, k) * p ** k * (1 - p) ** (n - k)


def test_binomial_matches_its_probabilities():
    rng = random.Random(1)
    for n, p in [(7, 0.3), (40, 0.9), (1, 0.5), (200, 0.02)]:
        draws = Counter(binomial(rng, n, p) for _ in range(20000))
        chi2 = 0.0
        for k in range(n + 1):
            e = 20000 * _pmf(n, p, k)
            if e >= 5:
                chi2 += (draws[k] - e) ** 2 / e
        cells = sum(20000 * _pmf(n, p, k) >= 5 for k in range(n + 1))
        # Far below the 0.1 % critical value for these degrees of freedom (seeded: no flakiness).
        assert chi2 < cells + 5 * math.sqrt(2 * cells) + 10, (n, p, chi2)
    big = [binomial(rng, 100000, 0.37) for _ in range(3000)]
    mean = sum(big) / len(big)
    assert abs(mean - 37000) < 4 * math.sqrt(100000 * 0.37 * 0.63 / 3000)


@settings(deadline=None)  # a loaded machine is no reason to fail
@given(st.integers(0, 10 ** 6), st.floats(0, 1), st.integers(0, 2 ** 32))
def test_binomial_in_range(n, p, seed):
    k = binomial(random.Random(seed), n, p)
    assert 0 <= k <= n
    if p == 0:
        assert k == 0
    if p == 1:
        assert k == n


@settings(deadline=None)  # a loaded machine is no reason to fail
@given(st.integers(0, 10 ** 5), st.lists(st.integers(0, 50), min_size=1, max_size=6), st.integers(0, 2 ** 32))
def test_multinomial_sums_and_zero_weights(n, weights, seed):
    if sum(weights) == 0:
        weights = weights + [1]
    counts = multinomial(random.Random(seed), n, weights)
    assert sum(counts) == n and all(c >= 0 for c in counts)
    assert all(c == 0 for c, w in zip(counts, weights) if w == 0)


def _units(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        first = "accept" if rng.random() < 0.8 else "reject"
        second = first if rng.random() < 0.85 else ("reject" if first == "accept" else "accept")
        unit = [first, second] + (["accept"] if rng.random() < 0.1 else [])
        out.append(unit)
    return out


def test_type_bootstrap_agrees_with_resampling_items():
    votes = _units(300, 4)
    for measure, stat in (("kappa", _kappa), ("alpha", _alpha)):
        lo, hi = type_bootstrap(votes, measure)
        ref_lo, ref_hi = bootstrap(votes, stat)
        point = stat(votes)
        assert lo < point < hi and ref_lo < point < ref_hi
        # Two independent draws of 400 resamples: the percentiles agree to Monte-Carlo error.
        assert abs(lo - ref_lo) < 0.06 and abs(hi - ref_hi) < 0.06, (measure, lo, ref_lo, hi, ref_hi)
    assert type_bootstrap([["accept", "accept"]], "kappa") == (None, None)
    # Everyone agrees on every item: κ is undefined in every resample, so no interval.
    assert type_bootstrap([["accept", "accept"]] * 50, "kappa") == (None, None)

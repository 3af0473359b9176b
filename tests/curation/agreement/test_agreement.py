"""Hand-computed agreement fixtures (worked out on paper, see each docstring)."""
import pytest

from curation.agreement.measures import cohen_kappa, krippendorff_alpha_nominal, percent_agreement

A, R = "accept", "reject"


def test_ten_items_two_raters():
    """6 (a,a), 2 (r,r), 1 (a,r), 1 (r,a).

    p_o = 8/10 = 0.8; each rater says accept 7 times: p_e = .7·.7 + .3·.3 = 0.58;
    κ = (0.8 − 0.58) / 0.42 = 0.523810.
    Coincidences: o_aa = 12, o_rr = 4, o_ar = o_ra = 2; n_a = 14, n_r = 6, n = 20;
    α = 1 − 19 · 4 / (2 · 14 · 6) = 1 − 76/168 = 0.547619.
    """
    pairs = [(A, A)] * 6 + [(R, R)] * 2 + [(A, R), (R, A)]
    assert percent_agreement(pairs).value == pytest.approx(0.8)
    k = cohen_kappa(pairs)
    assert k.value == pytest.approx(0.22 / 0.42)
    assert k.counts["p_expected"] == pytest.approx(0.58)
    assert k.counts["table"] == {"accept|accept": 6, "accept|reject": 1, "reject|accept": 1, "reject|reject": 2}
    a = krippendorff_alpha_nominal([list(p) for p in pairs])
    assert a.value == pytest.approx(1 - 76 / 168)
    assert a.counts["pairable_values"] == 20
    assert a.n == 10


def test_kappa_with_skewed_marginals():
    """Rater 1: a,a,a,r ; rater 2: a,a,r,r.  p_o = 3/4; p_e = (3·2 + 1·2)/16 = 0.5; κ = 0.5."""
    pairs = [(A, A), (A, A), (A, R), (R, R)]
    assert cohen_kappa(pairs).value == pytest.approx(0.5)


def test_alpha_three_raters_with_missing_value():
    """Units: [a,a,a], [a,r], [r,r,r], [a] (unpairable).

    u1: o_aa += 6/2 = 3; u2: o_ar += 1, o_ra += 1; u3: o_rr += 3.
    n_a = 4, n_r = 4, n = 8; α = 1 − 7 · 2 / (2 · 4 · 4) = 1 − 14/32 = 0.5625.
    """
    a = krippendorff_alpha_nominal([[A, A, A], [A, R], [R, R, R], [A]])
    assert a.value == pytest.approx(0.5625)
    assert a.n == 3


def test_undefined_values_explain_themselves():
    empty = percent_agreement([])
    assert empty.value is None and "No item" in empty.explanation
    same = cohen_kappa([(A, A), (A, A)])
    assert same.value is None and "chance" in same.explanation and "accept" in same.explanation
    alpha = krippendorff_alpha_nominal([[A, A], [A, A]])
    assert alpha.value is None and "same label" in alpha.explanation
    assert krippendorff_alpha_nominal([[A], [R]]).value is None
    # Perfect agreement with variation is 1, not undefined.
    assert cohen_kappa([(A, A), (R, R)]).value == pytest.approx(1.0)
    assert krippendorff_alpha_nominal([[A, A], [R, R]]).value == pytest.approx(1.0)

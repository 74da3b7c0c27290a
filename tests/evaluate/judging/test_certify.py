"""The cascade's threshold search (certify.py) against independent computations: scipy's
exact binomial test and its Clopper-Pearson bound, and the fixed-sequence rule redone with
scipy over every candidate threshold."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from checkllm_batch.evaluate.judging.certify import binom_cdf, certify, lower_bound, p_value

CDF_CASES = [(0, 1, 0.1), (0, 22, 0.1), (3, 30, 0.1), (10, 300, 0.05), (29, 300, 0.1),
             (150, 300, 0.5), (0, 5000, 0.001), (400, 5000, 0.1), (4999, 5000, 0.9),
             (5, 5, 0.3), (2, 10, 0.0), (2, 10, 1.0)]


@pytest.mark.parametrize(("k", "n", "p"), CDF_CASES)
def test_binomial_tail_is_scipys(k, n, p):
    assert binom_cdf(k, n, p) == pytest.approx(stats.binom.cdf(k, n, p), rel=1e-9, abs=1e-300)


BOUND_CASES = [(1, 0, 0.1), (22, 0, 0.1), (30, 3, 0.1), (300, 29, 0.1), (300, 0, 0.05),
               (300, 300, 0.1), (50, 25, 0.2), (1000, 80, 0.01), (7, 1, 0.5)]


@pytest.mark.parametrize(("n", "k", "risk"), BOUND_CASES)
def test_lower_bound_is_clopper_pearson(n, k, risk):
    """scipy's one-sided exact interval, and the beta quantile it stands for."""
    ours = lower_bound(n, k, risk)
    ci = stats.binomtest(n - k, n, alternative="greater").proportion_ci(1 - risk, "exact")
    assert ours == pytest.approx(ci.low, abs=1e-9)
    beta = 0.0 if k == n else stats.beta.ppf(risk, n - k, k + 1)
    assert ours == pytest.approx(beta, abs=1e-9)


def test_lower_bound_of_nothing_is_none():
    assert lower_bound(0, 0, 0.1) is None


@pytest.mark.parametrize(("n", "k", "a"), [(30, 1, 0.9), (300, 20, 0.9), (300, 35, 0.9),
                                            (12, 0, 0.8), (1, 0, 0.5)])
def test_p_value_is_binomtests(n, k, a):
    """P(Bin(n, 1 - a) <= k): the one-sided test that agreement exceeds a."""
    test = stats.binomtest(n - k, n, a, alternative="greater")
    assert p_value(n, k, a) == pytest.approx(test.pvalue, rel=1e-9)


def _by_scipy(confidence, agrees, a, risk):
    """The fixed-sequence rule, redone with scipy's test: distinct confidences from the
    highest, those keeping fewer rows than any test can certify skipped."""
    chosen = None
    for t in sorted(set(confidence), reverse=True):
        kept = confidence >= t
        n = int(kept.sum())
        if a ** n > risk:
            continue
        k = int((~agrees[kept]).sum())
        if stats.binomtest(n - k, n, a, alternative="greater").pvalue > risk:
            break
        chosen = (t, n, k)
    return chosen


@pytest.mark.parametrize("seed", range(12))
def test_threshold_search_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(40, 600))
    confidence = rng.choice([0.5, 0.6, 0.8, 1.0], n) if seed % 2 else rng.uniform(0.5, 1, n)
    agrees = rng.uniform(size=n) < 0.55 + 0.45 * (confidence - 0.5) / 0.5
    a, risk = [(0.9, 0.1), (0.85, 0.05), (0.8, 0.2)][seed % 3]
    got = certify(confidence, agrees, a, risk)
    want = _by_scipy(confidence, agrees, a, risk)
    if want is None:
        assert (got.threshold, got.n, got.bound) == (None, 0, None)
        return
    assert (got.threshold, got.n, got.k) == pytest.approx(want)
    ci = stats.binomtest(got.n - got.k, got.n, alternative="greater").proportion_ci(
        1 - risk, "exact")
    assert got.bound == pytest.approx(ci.low, abs=1e-9) and got.bound >= a


CERTIFY_CASES = [
    # (confidences, agrees, a, risk, threshold, n)
    ([], [], 0.9, 0.1, None, 0),  # nothing to calibrate on: keeps nothing
    ([1.0] * 30, [True] * 30, 0.9, 0.1, 1.0, 30),  # all sure and right
    ([1.0] * 30, [False] * 30, 0.9, 0.1, None, 0),  # sure and wrong: keeps nothing
    ([1.0] * 10, [True] * 10, 0.9, 0.1, None, 0),  # too few rows for any test
    ([1.0] * 40 + [0.6] * 40, [True] * 40 + [False] * 40, 0.9, 0.1, 1.0, 40),
    ([1.0] * 40 + [0.6] * 40, [True] * 80, 0.9, 0.1, 0.6, 80),
]


@pytest.mark.parametrize(("c", "ok", "a", "risk", "threshold", "n"), CERTIFY_CASES)
def test_certify_cases(c, ok, a, risk, threshold, n):
    got = certify(np.array(c, dtype=float), np.array(ok, dtype=bool), a, risk)
    assert (got.threshold, got.n) == (threshold, n)

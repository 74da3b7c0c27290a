"""Corrected estimates (issue 44) against independent computations: ppi_py (the reference
implementation of PPI++) for the estimate, its interval and lambda; statsmodels' Wilson
interval for the labels-only and judge-only rates; numpy by hand for stratified PPI."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from ppi_py.ppi import _calc_lam_glm
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_confint

from checkllm_batch.analysis.corrected import (
    assumed_agreement,
    corrected_sample_size,
    difference,
    estimate,
    labels_for_difference,
    labels_needed,
    paired_difference,
    ppi_mean,
)


def _binary(seed, n, big, p=0.6, tpr=0.9, tnr=0.7):
    rng = np.random.default_rng(seed)
    y = (rng.random(n + big) < p).astype(float)
    f = np.where(y == 1, rng.random(n + big) < tpr, rng.random(n + big) > tnr).astype(float)
    return y[:n], f[:n], f[n:], y[n:]


def _scores(seed, n, big):
    rng = np.random.default_rng(seed)
    y = rng.beta(2, 3, n + big)
    f = np.clip(y + rng.normal(0.1, 0.15, n + big), 0, 1)
    return y[:n], f[:n], f[n:], y[n:]


# (name, y, f, f unlabelled, weights): pass rates, scores, unequal weights, tiny samples
CASES = [
    ("binary 200 of 5k", *_binary(1, 200, 5000)[:3], None),
    ("binary 30 of 300", *_binary(2, 30, 300)[:3], None),
    ("a judge that says pass to all but a few", *_binary(3, 100, 2000, tpr=1, tnr=0.02)[:3],
     None),
    ("a judge no better than chance", *_binary(4, 150, 3000, tpr=0.5, tnr=0.5)[:3], None),
    ("scores", *_scores(5, 120, 4000)[:3], None),
    ("binary, weights", *_binary(6, 200, 5000)[:3],
     np.random.default_rng(6).uniform(0.2, 3, 200)),
    ("scores, weights", *_scores(7, 80, 1000)[:3], np.random.default_rng(7).uniform(1, 2, 80)),
    ("two labels", np.array([1.0, 0.0]), np.array([1.0, 1.0]), np.array([1.0, 0.0, 1.0]),
     None),
]


def _reference_lambda(y, f, fu, w):
    """ppi_py's lambda (ppi_mean_ci with lam=None): its _calc_lam_glm at the PPI estimate."""
    w = np.ones(len(y)) if w is None else w / w.sum() * len(y)
    theta = ppi_mean_pointestimate(y, f, fu, lam=1, w=w)
    return _calc_lam_glm((w * (y - theta))[:, None], (w * (f - theta))[:, None],
                         (fu - theta)[:, None], np.eye(1), clip=True)


@pytest.mark.parametrize("name, y, f, fu, w", CASES, ids=[c[0] for c in CASES])
def test_ppi_matches_ppi_py(name, y, f, fu, w):
    row = ppi_mean(y, f, fu, a=w)
    low, high = ppi_mean_ci(y, f, fu, alpha=0.05, w=w)
    assert row["corrected"] == pytest.approx(
        float(ppi_mean_pointestimate(y, f, fu, w=w)[0]), abs=1e-10)
    assert (row["corrected_low"], row["corrected_high"]) == pytest.approx(
        (float(low[0]), float(high[0])), abs=1e-9)
    assert row["lam"] == pytest.approx(float(_reference_lambda(y, f, fu, w)), abs=1e-9)


@pytest.mark.parametrize("name, y, f, fu, w", [c for c in CASES if c[4] is None],
                         ids=[c[0] for c in CASES if c[4] is None])
def test_effective_labels_are_the_classical_variance_over_ppi(name, y, f, fu, w):
    """n_effective: the labels the PPI interval's width would need without the judge."""
    row = ppi_mean(y, f, fu)
    low, high = ppi_mean_ci(y, f, fu, alpha=0.05)
    classical = ppi_mean_ci(y, f, fu, alpha=0.05, lam=0)
    ratio = ((classical[1] - classical[0]) / (high - low))[0] ** 2
    assert row["n_effective"] == pytest.approx(len(y) * ratio, rel=1e-9)


@pytest.mark.parametrize("seed, n, big", [(11, 200, 5000), (12, 40, 100), (13, 7, 30)])
def test_labels_only_and_judge_only_are_wilson(seed, n, big):
    y, f, fu, _ = _binary(seed, n, big)
    row = ppi_mean(y, f, fu, pass_rate=True)
    assert (row["labels_low"], row["labels_high"]) == pytest.approx(
        proportion_confint(int(y.sum()), n, alpha=0.05, method="wilson"), abs=1e-12)
    judged = np.concatenate([f, fu])
    assert row["judge_only"] == pytest.approx(judged.mean())
    assert (row["judge_low"], row["judge_high"]) == pytest.approx(
        proportion_confint(int(judged.sum()), n + big, alpha=0.05, method="wilson"),
        abs=1e-12)


def test_constant_judge_gives_the_labels_alone():
    """A judge that passes everything carries nothing: lambda 0, the classical interval
    (ppi_py's own lambda is NaN there)."""
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    row = ppi_mean(y, np.ones(5), np.ones(50))
    assert row["lam"] == 0
    low, high = ppi_mean_ci(y, np.ones(5), np.ones(50), alpha=0.05, lam=0)
    assert (row["corrected_low"], row["corrected_high"]) == pytest.approx((low[0], high[0]))


def _strata_frame(seed, by_verdict):
    """Two strata, labels drawn unequally (80 of one, 40 of the other): by the judge's
    verdict (the judge constant within each), or by a coin (the judge varies within)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(3000) < 0.55).astype(float)
    f = np.where(y == 1, rng.random(3000) < 0.95, rng.random(3000) > 0.6).astype(float)
    coin = rng.random(3000) < 0.3
    stratum = np.where(f == 1 if by_verdict else coin, "s1", "s0")
    labelled = np.zeros(3000, bool)
    for s, k in (("s1", 40), ("s0", 80)):
        labelled[rng.choice(np.flatnonzero(stratum == s), k, replace=False)] = True
    return pl.DataFrame({"y": np.where(labelled, y, np.nan), "f": f, "stratum": stratum}
                        ).with_columns(pl.col("y").fill_nan(None)), y, f, stratum, labelled


def _within(y, f, fu, constant_judge):
    """(theta_h, V_h): by hand with numpy where the judge is constant (lambda 0: the
    labels' mean and var0 / n), else ppi_py's estimate and interval."""
    if constant_judge:
        return y.mean(), y.var() / len(y)
    low, high = ppi_mean_ci(y, f, fu, alpha=0.05)
    return (float(ppi_mean_pointestimate(y, f, fu)[0]),
            ((high[0] - low[0]) / (2 * 1.959963984540054)) ** 2)


@pytest.mark.parametrize("by_verdict", [True, False], ids=["by verdict", "by a coin"])
def test_stratified_ppi_by_hand(by_verdict):
    frame, y, f, stratum, labelled = _strata_frame(21, by_verdict)
    row = estimate(frame).row(0, named=True)
    theta = var = classical = square = 0.0
    for s in ("s1", "s0"):
        cell, lab = stratum == s, (stratum == s) & labelled
        share = cell.sum() / len(y)
        theta_h, var_h = _within(y[lab], f[lab], f[cell & ~labelled], by_verdict)
        theta += share * theta_h
        var += share ** 2 * var_h
        classical += share * y[lab].mean()
        square += share * (y[lab] ** 2).mean()
    assert row["strata"] == 2 and row["n_labelled"] == 120 and row["n_judged"] == 3000
    assert row["corrected"] == pytest.approx(theta, abs=1e-12)
    assert row["corrected_high"] - row["corrected"] == pytest.approx(
        1.959963984540054 * np.sqrt(var), abs=1e-12)
    assert row["labels_only"] == pytest.approx(classical, abs=1e-12)
    # the labels a simple random sample would need: the variance of y (by strata) / V
    assert row["n_effective"] == pytest.approx((square - classical ** 2) / var, rel=1e-9)
    assert row["judge_only"] == pytest.approx(f.mean())


def test_a_stratum_with_one_label_is_refused_not_dropped():
    frame = pl.DataFrame({"y": [1.0, 0.0, 1.0, None, None, None],
                          "f": [1.0, 0.0, 1.0, 1.0, 0.0, 0.0],
                          "stratum": ["a", "a", "b", "a", "b", "b"]})
    row = estimate(frame).row(0, named=True)
    assert row["corrected"] is None and row["corrected_low"] is None
    assert "1 label" in row["note"]


def test_groups_are_corrected_apart():
    y, f, fu, _ = _binary(31, 100, 900)
    y2, f2, fu2, _ = _binary(32, 60, 500, p=0.3)
    frame = pl.DataFrame({
        "provider": ["a"] * 1000 + ["b"] * 560,
        "y": np.concatenate([y, np.full(900, np.nan), y2, np.full(500, np.nan)]),
        "f": np.concatenate([f, fu, f2, fu2])}).with_columns(pl.col("y").fill_nan(None))
    rows = estimate(frame, ["provider"]).sort("provider")
    for row, (yy, ff, uu) in zip(rows.iter_rows(named=True), [(y, f, fu), (y2, f2, fu2)]):
        assert row["corrected"] == pytest.approx(float(ppi_mean_pointestimate(yy, ff, uu)[0]))


def test_paired_difference_is_ppi_of_the_per_case_differences():
    ya, fa, fua, _ = _binary(41, 150, 2000, p=0.6)
    yb, fb, fub, _ = _binary(42, 150, 2000, p=0.5)
    ids = np.arange(2150)
    frame = lambda y, f, fu: pl.DataFrame({  # noqa: E731
        "case_id": ids, "y": np.concatenate([y, np.full(2000, np.nan)]),
        "f": np.concatenate([f, fu])}).with_columns(pl.col("y").fill_nan(None))
    got = paired_difference(frame(ya, fa, fua), frame(yb, fb, fub))
    low, high = ppi_mean_ci(ya - yb, fa - fb, fua - fub, alpha=0.05)
    assert got["difference"] == pytest.approx(
        float(ppi_mean_pointestimate(ya - yb, fa - fb, fua - fub)[0]), abs=1e-10)
    assert (got["low"], got["high"]) == pytest.approx((low[0], high[0]), abs=1e-9)


def test_difference_of_two_providers_adds_the_variances():
    a, b = _binary(43, 100, 1000, p=0.7)[:3], _binary(44, 120, 1500, p=0.5)[:3]
    got = difference(ppi_mean(*a), ppi_mean(*b))
    (la, ha), (lb, hb) = (ppi_mean_ci(*x, alpha=0.05) for x in (a, b))
    diff = float(ppi_mean_pointestimate(*a)[0] - ppi_mean_pointestimate(*b)[0])
    half = np.hypot(ha[0] - la[0], hb[0] - lb[0]) / 2
    assert (got["low"], got["difference"], got["high"]) == pytest.approx(
        (diff - half, diff, diff + half), abs=1e-9)


@pytest.mark.parametrize("seed", [51, 52])
def test_labels_needed_meets_the_width_it_was_asked(seed):
    """The planned label counts give, on data like the pilot, an interval of the asked
    half-width (within sampling error): labels alone by statsmodels' Wald width, PPI++ by
    ppi_py's width at that n."""
    y, f, fu, _ = _binary(seed, 20000, 20000, p=0.55, tpr=0.9, tnr=0.8)
    rho = np.corrcoef(y, f)[0, 1]
    alone, with_judge = labels_needed(0.02, y.var(), rho, 20000)
    assert with_judge < alone
    low, high = proportion_confint(int(y[:alone].sum()), alone, alpha=0.05, method="normal")
    assert (high - low) / 2 == pytest.approx(0.02, rel=0.03)
    low, high = ppi_mean_ci(y[:with_judge], f[:with_judge], fu, alpha=0.05)
    assert (high[0] - low[0]) / 2 == pytest.approx(0.02, rel=0.05)


def test_assumed_agreement_matches_simulated_correlation():
    y, f, _, _ = _binary(53, 200000, 0, p=0.4, tpr=0.9, tnr=0.7)
    var_y, rho = assumed_agreement(0.4, 0.9, 0.7)
    assert var_y == pytest.approx(0.24)
    assert rho == pytest.approx(np.corrcoef(y, f)[0, 1], abs=0.01)


def test_unlabelled_rows_may_stand_for_many_cases():
    """Judged-only cases counted at once (m) give the estimate their rows give."""
    y, f, fu, _ = _binary(61, 50, 700)
    ones = int(fu.sum())
    counted = pl.DataFrame({"y": [*y, None, None], "f": [*f, 1.0, 0.0],
                            "m": [1] * 50 + [ones, 700 - ones]})
    assert estimate(counted).row(0, named=True) == pytest.approx(
        ppi_mean(y, f, fu, pass_rate=True))


# (drop, var_y, rho, judged per group, power, alpha): a difference to detect
DIFFERENCES = [(0.05, 0.25, 0.0, 10 ** 6, 0.8, 0.05), (0.1, 0.21, 0.6, 5000, 0.8, 0.05),
               (0.03, 0.16, 0.9, 200000, 0.9, 0.01), (0.2, 0.09, 0.3, 300, 0.8, 0.1),
               (0.1, 0.25, 0.95, 50, 0.8, 0.05)]


@pytest.mark.parametrize("drop, var_y, rho, big, power, alpha", DIFFERENCES)
def test_labels_for_a_difference_reach_statsmodels_power(drop, var_y, rho, big, power, alpha):
    """Labels alone: statsmodels' sample size of a two-sample z-test; with the judge: at
    the planned n, the PPI++ variance var_y / n (1 - rho^2 N / (N + n)) gives the power by
    statsmodels' power function, and a few labels fewer would not."""
    alone, with_judge = labels_for_difference(drop, var_y, rho, big, power, alpha)
    z_test = NormalIndPower()
    reference = z_test.solve_power(effect_size=drop / np.sqrt(var_y), alpha=alpha,
                                   power=power, ratio=1)
    assert np.ceil(reference) <= alone <= np.ceil(reference) + 1

    def achieved(n):
        sd = np.sqrt(var_y * (1 - rho ** 2 * big / (big + n)))  # per label, at n
        return z_test.power(effect_size=drop / sd, nobs1=n, alpha=alpha, ratio=1)
    assert with_judge <= alone and achieved(with_judge) >= power - 1e-9
    assert with_judge == 2 or achieved(with_judge - 2) < power


def test_planned_labels_give_the_power_on_ppi_py_intervals():
    """Two providers 10 points apart, a judge with TPR = TNR = 0.85 on 2,000 cases each:
    with the planned labels per provider, the corrected difference (ppi_py's intervals,
    variances added) is significant in about 80 % of 400 simulated evaluations."""
    alone, n = corrected_sample_size(0.1, 0.6, tpr=0.85, judged=2000)
    assert n < alone
    rng = np.random.default_rng(71)
    hits = 0
    for _ in range(400):  # one simulated pair of providers each
        means, variances = [], []
        for p in (0.6, 0.5):
            y = (rng.random(2000) < p).astype(float)
            f = np.where(y == 1, rng.random(2000) < 0.85, rng.random(2000) > 0.85).astype(float)
            low, high = ppi_mean_ci(y[:n], f[:n], f[n:], alpha=0.05)
            means.append(ppi_mean_pointestimate(y[:n], f[:n], f[n:])[0])
            variances.append(((high[0] - low[0]) / (2 * 1.959963984540054)) ** 2)
        hits += abs(means[0] - means[1]) / np.sqrt(sum(variances)) > 1.959963984540054
    assert 0.72 <= hits / 400 <= 0.88

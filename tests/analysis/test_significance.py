"""One level, one question (issue 41): every difference's interval is drawn at the level of
its own test, so "excludes 0" and "significant" never disagree; metric tests can reach
Holm's threshold with many rows. References: statsmodels (exact McNemar, Clopper-Pearson,
Holm) and scipy (binomial test, paired t-test), never our own figures."""

from __future__ import annotations

import gc
import re

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from checkllm_batch.analysis import stats
from checkllm_batch.analysis.significance import (
    bootstrap_tests,
    pass_rate_table,
    replicates_needed,
)
from checkllm_batch.analysis.wording import pass_rate_lines

ALPHA = 0.05
FAMILY = 5  # providers compared at once: Holm over 5 pass rates


@pytest.fixture(autouse=True)
def _no_full_collection(monkeypatch):
    """statsmodels' Holm runs gc.collect() on every call (0.3 s each here): not needed."""
    monkeypatch.setattr(gc, "collect", lambda *args: 0)


def _tables(count: int, seed: int) -> np.ndarray:
    """(regressed, improved, concordant) per table: small and large, balanced and not."""
    rng = np.random.default_rng(seed)
    scale = rng.choice([5, 20, 60, 300], count)
    regressed = rng.integers(0, scale + 1)
    improved = rng.binomial(scale, rng.uniform(0.05, 0.95, count))
    return np.stack([regressed, improved, rng.integers(0, 400, count)], axis=1)


def _cases(tables: np.ndarray) -> pl.DataFrame:
    """A comparison's cases frame: one provider per table; its regressed, improved and
    unchanged (passing both times) cases."""
    rows = []
    for i, (b, c, same) in enumerate(tables):
        for change, n, a, z in (("regressed", b, "pass", "fail"), ("improved", c, "fail", "pass"),
                                ("unchanged", same, "pass", "pass")):
            rows += [(f"p{i:04d}", change, a, z)] * int(n)
    return pl.DataFrame(rows, schema=["provider", "change", "status_a", "status_b"],
                        orient="row").with_columns(prompt=pl.lit(None, pl.String))


def _printed_excludes_zero(line: str) -> bool:
    low, high = re.search(r"\[(\S+), (\S+)\]", line).groups()
    return low.startswith("+") or high.startswith("−")


def test_1000_tables_interval_excludes_zero_exactly_when_significant():
    """1,000 random discordance tables in families of 5 providers: each printed interval
    excludes 0 exactly when the printed verdict is significant; that verdict is
    statsmodels' Holm over statsmodels' exact McNemar p-values; the interval is
    Clopper-Pearson (statsmodels) at the row's printed level, scaled to points."""
    tables = _tables(1000, 41)
    seen = {True: 0, False: 0}
    for start in range(0, len(tables), FAMILY):
        family = tables[start:start + FAMILY]
        rates = pass_rate_table(_cases(family), ALPHA)
        p = [mcnemar([[0, b], [c, 0]], exact=True).pvalue for b, c, _ in family]
        reject = multipletests(p, ALPHA, method="holm")[0]
        for row, line, table, p_row, expected in zip(rates.iter_rows(named=True),
                                                     pass_rate_lines(rates), family, p, reject):
            b, c, same = (int(x) for x in table)
            assert row["p_value"] == pytest.approx(p_row)
            assert row["significant"] == expected, (table, row)
            assert ("not significant" not in line) == expected
            assert _printed_excludes_zero(line) == expected, (line, row)
            assert (row["diff_low"] > 0 or row["diff_high"] < 0) == expected
            assert f"({100 * row['level']:.4g} %)" in line
            if b + c:
                low, high = proportion_confint(c, b + c, alpha=1 - row["level"], method="beta")
                n = b + c + same
                assert (row["diff_low"], row["diff_high"]) == pytest.approx(
                    ((b + c) / n * (2 * low - 1), (b + c) / n * (2 * high - 1)), abs=1e-9)
            seen[bool(expected)] += 1
    assert min(seen.values()) > 100  # both verdicts are well represented


def test_each_mcnemar_p_matches_statsmodels_and_holm_levels_match_its_decisions():
    tables = _tables(200, 7)
    p = stats.mcnemar_exact(tables[:, 0], tables[:, 1])
    assert p == pytest.approx([mcnemar([[0, b], [c, 0]], exact=True).pvalue
                               for b, c, _ in tables])
    for family in np.array_split(p, 20):
        level, significant = stats.holm_levels(family, ALPHA)
        assert list(significant) == list(multipletests(family, ALPHA, method="holm")[0])
        assert list(significant) == list(family < level)


# --- metric rows: reachable significance ------------------------------------------------

ROWS, UNITS = 40, 200


def _family_diffs(rng: np.random.Generator, drop: float, replicates: int) -> pl.DataFrame:
    """40 metric rows of paired 0/1 unit values (rate 0.7 in A); row 0 drops by `drop` in
    B, the others do not change. Each row's paired-bootstrap replicates of mean B - mean A
    drawn by our Poisson bootstrap (stats.replicate_sums), units resampled in pairs."""
    a = rng.random((UNITS, ROWS)) < 0.7
    b = rng.random((UNITS, ROWS)) < 0.7
    b[:, 0] = rng.random(UNITS) < 0.7 - drop
    x = np.hstack([np.ones((UNITS, 1)), a, b]).astype(np.float64)
    sums = stats.replicate_sums(np.zeros(UNITS, dtype=np.int64), np.ones(UNITS), x,
                                replicates, int(rng.integers(1 << 31)))[0]
    diffs = (sums[:, 1 + ROWS:] - sums[:, 1:1 + ROWS]) / sums[:, :1]
    return pl.DataFrame({"metric": [f"m{i}" for i in range(ROWS)],
                         "replicates": pl.Series(diffs.T)}), a, b


def test_a_30_point_drop_among_40_metric_rows_is_significant():
    """With the replicates 40 rows need, a 30-point drop is found in every family, as a
    paired t-test (scipy) with statsmodels' Holm finds it; the interval excludes 0 then."""
    replicates = replicates_needed(ROWS, ALPHA)
    assert 2 / (replicates + 1) < ALPHA / ROWS / 5  # Holm's first threshold is in reach
    rng = np.random.default_rng(3)
    for _ in range(20):
        diffs, a, b = _family_diffs(rng, 0.30, replicates)
        tested = bootstrap_tests(diffs, ALPHA)
        scipy_p = sps.ttest_rel(b.astype(float), a.astype(float)).pvalue
        assert multipletests(scipy_p, ALPHA, method="holm")[0][0]
        row = tested.row(0, named=True)
        assert row["significant"] and row["diff_high"] < 0
        assert row["level"] == pytest.approx(1 - ALPHA / ROWS)  # tested first by Holm


def test_1000_replicates_could_not_reach_it():
    """The old default: 1,000 replicates give p >= 2/1001, above Holm's 0.05 / 40."""
    diffs, _, _ = _family_diffs(np.random.default_rng(3), 0.30, 1000)
    assert not bootstrap_tests(diffs, ALPHA)["significant"][0]


def test_no_change_in_40_rows_is_significant_at_the_nominal_rate():
    """100 families of 40 unchanged rows: the share of families with any significant row
    (the family-wise error) is not above alpha (scipy's one-sided binomial test), and in
    every row the interval excludes 0 exactly when the row is significant."""
    replicates = replicates_needed(ROWS, ALPHA)
    rng = np.random.default_rng(11)
    families, false_alarms = 100, 0
    for _ in range(families):
        tested = bootstrap_tests(_family_diffs(rng, 0.0, replicates)[0], ALPHA)
        excludes = (tested["diff_low"] > 0) | (tested["diff_high"] < 0)
        assert excludes.to_list() == tested["significant"].to_list()
        false_alarms += bool(tested["significant"].any())
    assert sps.binomtest(false_alarms, families, ALPHA, alternative="greater").pvalue > 0.01


def test_bootstrap_interval_inverts_the_bootstrap_p_value():
    """Order-statistic percentile interval vs the bootstrap p-value, at many levels and
    sample shapes: excludes 0 exactly when p < alpha; numpy's 'inverted_cdf' quantile
    agrees on the bounds' order statistics."""
    rng = np.random.default_rng(5)
    for _ in range(500):
        n = int(rng.integers(50, 3000))
        values = rng.normal(rng.normal(0, 0.1), 0.05, n).round(int(rng.integers(1, 4)))
        alpha = float(rng.choice([0.05, 0.01, 0.05 / 7, 0.05 / 40, 0.2]))
        low, high = stats.bootstrap_interval(values[None, :], np.array([alpha]))
        p = stats.bootstrap_p_value(values[None, :])[0]
        assert (low[0] > 0 or high[0] < 0) == (p < alpha)

"""Is a change between two runs more than noise? Per provider x prompt: the pass rates,
their difference over the matched cases with the exact McNemar test on the cases whose
verdict changed and the exact conditional interval that inverts that test; every metric's
difference with a paired-bootstrap test and the percentile interval that inverts it.
Holm's procedure runs within each family (the pass rates, which the gate reads; the
metrics), so adding metrics to a suite never moves the gate; each row's interval is drawn
at the level Holm tested that row at (column `level`), so an interval excludes 0 exactly
when its row is significant.

The bootstrap draws as many replicates as the metric rows tested need for Holm's smallest
threshold to be reachable (`replicates_needed`): the p-value of B replicates cannot go
below 2 / (B + 1).

Paired: a test of both runs is one resampling unit (its cases in A and in B go in or out
together), a case present in one run only is a unit of its own side, so each replicate's
difference is B's statistic minus A's over the same resampled tests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import duckdb
import numpy as np
import polars as pl

from ..metrics.named import case_metrics_sql
from ..suites.derived import quote
from .intervals import (
    TEST_SUMS,
    profiles,
    replicate_frame,
    run_derived,
    run_metrics,
    sql_text,
    statistics_sql,
)
from .stats import (
    bootstrap_interval,
    bootstrap_p_value,
    holm,
    holm_levels,
    mcnemar_exact,
    mcnemar_interval,
)

_KEYS = ("provider", "prompt")


def _side_sums(side: str, metrics: Sequence[str]) -> str:
    """The unit sums of one side (a or b) of the matched cases `m`, joined to that run's
    per-case metric sums `m{side}`."""
    status, score = f"m.status_{side}", f"m.score_{side}"
    columns = [f"COUNT(m.case_{side})::DOUBLE AS {quote(side + ':__count')}",
               f"COUNT(*) FILTER ({status} = 'pass')::DOUBLE AS {quote(side + ':passed')}",
               f"COALESCE(SUM({score}), 0) AS {quote(side + ':score_sum')}",
               f"COUNT({score})::DOUBLE AS {quote(side + ':score_n')}"]
    columns += [f"COALESCE(SUM(m{side}.{quote(p + m)}), 0) AS {quote(side + ':' + p + m)}"
                for m in metrics for p in ("s:", "w:")]
    return ", ".join(columns)


def _metric_pivot(side: str, metrics: Sequence[str]) -> str:
    filtered = ", ".join(
        f"SUM(sum) FILTER (metric = {sql_text(m)}) AS {quote('s:' + m)}, "
        f"SUM(weight) FILTER (metric = {sql_text(m)}) AS {quote('w:' + m)}" for m in metrics)
    per_case = case_metrics_sql().replace("$run", f"${side}")
    return f"m{side} AS (SELECT case_id, {filtered} FROM ({per_case}) GROUP BY case_id)"


def paired_units_sql(metrics: Sequence[str]) -> str:
    """One row per test of the matched cases `__matched` (a compare's cases frame): each
    side's sums, side by side."""
    pivots = "".join(", " + _metric_pivot(s, metrics) for s in "ab") if metrics else ""
    joins = ("LEFT JOIN ma ON ma.case_id = m.case_a LEFT JOIN mb ON mb.case_id = m.case_b"
             if metrics else "")
    return f"""
        WITH m AS (SELECT *, row_number() OVER () AS row FROM __matched){pivots}
        SELECT m.provider, m.prompt, {_side_sums('a', metrics)}, {_side_sums('b', metrics)}
        FROM m {joins}
        GROUP BY m.provider, m.prompt, m.test_id, CASE WHEN m.test_id IS NULL THEN m.row END"""


def _side_statistics(local: duckdb.DuckDBPyConnection, reps: pl.DataFrame, side: str,
                     metrics: Sequence[str], derived) -> pl.DataFrame:
    """Each replicate's statistics of one side, pass rate included."""
    prefix = f"{side}:"
    local.register("reps", reps.select(*_KEYS, "replicate", *[
        pl.col(c).alias(c[len(prefix):]) for c in reps.columns if c.startswith(prefix)]
    ).to_arrow())
    keys = (*_KEYS, "replicate")
    try:
        query = statistics_sql(metrics, derived, keys)
    except ValueError:  # a derived expression naming what the run does not have
        query = statistics_sql(metrics, (), keys)
    frame = local.sql(query).pl()
    local.unregister("reps")
    return frame


def replicates_needed(rows: int, alpha: float) -> int:
    """Replicates for `rows` bootstrap tests under Holm at `alpha`: the smallest threshold,
    alpha / rows, then lets up to 9 replicates fall on the wrong side of 0 (20 rows x 20
    = 8,000 at alpha 0.05), in whole thousands."""
    return 1000 * math.ceil(20 * max(rows, 1) / alpha / 1000)


def metric_differences(con: duckdb.DuckDBPyConnection, matched: pl.DataFrame, run_a: str,
                       run_b: str, replicates: int, seed: int) -> pl.DataFrame:
    """provider, prompt, metric, kind, replicates (a list): the paired-bootstrap replicates
    of B - A for the mean score, every named and every derived metric."""
    metrics = sorted(set(run_metrics(con, run_a)) | set(run_metrics(con, run_b)))
    features = [f"{s}:{f}" for s in "ab" for f in TEST_SUMS
                + [p + m for m in metrics for p in ("s:", "w:")]]
    con.register("__matched", matched.select(
        "provider", "prompt", "test_id", "case_a", "case_b", "status_a", "status_b",
        "score_a", "score_b").to_arrow())
    try:
        params = {"a": run_a, "b": run_b} if metrics else {}  # no metric: no $a, $b
        groups, sums = profiles(con, paired_units_sql(metrics), params, _KEYS, features,
                                replicates, seed)
    finally:
        con.unregister("__matched")
    reps = replicate_frame(groups, sums, features)
    local = duckdb.connect()
    sides = [_side_statistics(local, reps, s, metrics, run_derived(con, run))
             for s, run in (("a", run_a), ("b", run_b))]
    local.close()
    keys = [*_KEYS, "replicate", "metric", "kind"]
    both = sides[0].join(sides[1], on=keys, how="full", coalesce=True, nulls_equal=True,
                         suffix="_b")
    diffs = both.with_columns(diff=pl.col("value_b") - pl.col("value")).group_by(
        keys[:2] + keys[3:], maintain_order=True).agg(replicates=pl.col("diff"))
    return diffs


def bootstrap_tests(diffs: pl.DataFrame, alpha: float) -> pl.DataFrame:
    """Each row's bootstrap p-value, Holm's adjustment and level, and the percentile
    interval at that level, from its list of replicate differences (`replicates`)."""
    lists = diffs["replicates"].cast(pl.List(pl.Float64))
    width = max(lists.list.len().to_list() or [1])  # every row drew the same replicates
    values = lists.list.to_array(width).to_numpy() if diffs.height else np.empty((0, 1))
    p = bootstrap_p_value(values)
    level, significant = holm_levels(p, alpha)
    low, high = bootstrap_interval(values, level)
    return diffs.drop("replicates").with_columns(
        diff_low=_floats(low), diff_high=_floats(high), p_value=_floats(p),
        p_adjusted=_floats(holm(p)), level=_floats(1 - level),
        significant=pl.Series(significant, dtype=pl.Boolean))


def _floats(values: np.ndarray) -> pl.Series:
    return pl.Series(np.asarray(values, dtype=np.float64), dtype=pl.Float64).fill_nan(None)


def pass_rate_table(cases: pl.DataFrame, alpha: float) -> pl.DataFrame:
    """Per provider x prompt: cases and pass rate of each run; over the cases matched in
    both, B - A (improved - regressed, over matched) with its exact conditional interval,
    the cases that regressed / improved, McNemar's exact p-value, Holm's adjustment, the
    level Holm tested the row at (the interval's) and whether it is significant at
    `alpha`. A provider x prompt with no matched case has no test."""
    counted = cases.group_by(_KEYS, maintain_order=True).agg(
        cases_a=pl.col("status_a").is_not_null().sum(),
        cases_b=pl.col("status_b").is_not_null().sum(),
        matched=(pl.col("status_a").is_not_null() & pl.col("status_b").is_not_null()).sum(),
        passed_a=(pl.col("status_a") == "pass").sum(),
        passed_b=(pl.col("status_b") == "pass").sum(),
        verdicts_a=pl.col("status_a").is_in(["pass", "fail"]).sum(),
        verdicts_b=pl.col("status_b").is_in(["pass", "fail"]).sum(),
        errors_a=(pl.col("status_a") == "error").sum(),
        errors_b=(pl.col("status_b") == "error").sum(),
        regressed=(pl.col("change") == "regressed").sum(),
        improved=(pl.col("change") == "improved").sum(),
    ).sort(_KEYS, nulls_last=False)
    # a side with no verdict (every case errored): no rate (NULL, never 0 %) and no test
    tested = (pl.col("verdicts_a") > 0) & (pl.col("verdicts_b") > 0)
    counted = counted.with_columns(matched=pl.when(tested).then("matched").otherwise(0))
    rates = counted.with_columns(
        pass_rate_a=pl.col("passed_a") / pl.when(pl.col("verdicts_a") > 0).then("cases_a"),
        pass_rate_b=pl.col("passed_b") / pl.when(pl.col("verdicts_b") > 0).then("cases_b"),
        diff=(pl.col("improved").cast(pl.Int64) - pl.col("regressed")) / pl.when(
            pl.col("matched") > 0).then("matched"))
    b, c, n = (rates[k].to_numpy() for k in ("regressed", "improved", "matched"))
    p = np.where(n > 0, mcnemar_exact(b, c), np.nan)
    level, significant = holm_levels(p, alpha)
    bounds = np.array([mcnemar_interval(*row) if not math.isnan(row[3]) else (math.nan,) * 2
                       for row in zip(b, c, n, level)]).reshape(-1, 2)  # one per group
    return rates.with_columns(
        diff_low=_floats(bounds[:, 0]), diff_high=_floats(bounds[:, 1]), p_value=_floats(p),
        p_adjusted=_floats(holm(p)), level=_floats(1 - level),
        significant=pl.Series(significant, dtype=pl.Boolean),
    ).select(*_KEYS, "cases_a", "cases_b", "errors_a", "errors_b", "matched", "pass_rate_a",
             "pass_rate_b", "diff",
             "diff_low", "diff_high", "regressed", "improved", "p_value", "p_adjusted",
             "level", "significant")


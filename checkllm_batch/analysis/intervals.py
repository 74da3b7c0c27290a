"""Bootstrap intervals of a run's mean scores, named metrics and derived metrics, computed
on demand by the readers (never stored: the run pays nothing; benchmarks/analysis.py times
them on 1M cases).

The resampled unit is a test: the cases of one test_id under one provider x prompt (its
repeats) go in or out together; a case without a test_id is a unit of its own. Each unit
is reduced in SQL to a row of sums (cases, passes, score sum and count, each named metric's
sum and weight), identical rows are merged (`profiles`), stats.replicate_sums draws the
replicates' sums, and every statistic is a function of them: mean score = score sum /
score count, a named metric = sum / weight, a derived metric = its SQL over the replicate's
sums (metrics/derived.py, the same steps as the stored value). Percentile intervals.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import duckdb
import numpy as np
import polars as pl

from ..metrics.derived import derived_over
from ..metrics.named import case_metrics_sql
from ..store import runs as store
from ..suites.derived import quote
from ..suites.model import DerivedMetric
from .stats import LEVEL, REPLICATES, SEED, replicate_sums

_KEYS = ("provider", "prompt")
TEST_SUMS = ["__count", "passed", "score_sum", "score_n"]


def sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def profiles(con: duckdb.DuckDBPyConnection, units: str, params: dict, keys: Sequence[str],
             features: Sequence[str], replicates: int, seed: int
             ) -> tuple[pl.DataFrame, np.ndarray]:
    """The groups (`keys` values, one row each) and their (groups x replicates x features)
    bootstrap sums, from `units`: a query with one row per resampled unit holding the
    `keys` and `features` columns. Units with the same row are merged first."""
    key_list = ", ".join(keys)
    merged = store.frame(con, f"SELECT {key_list}, {', '.join(map(quote, features))}, "
                              f"COUNT(*) AS __units FROM ({units}) GROUP BY ALL "
                              f"ORDER BY ALL NULLS FIRST", params)
    group = merged.select(pl.struct(list(keys)).rle_id()).to_series().to_numpy()
    groups = merged.select(keys).unique(maintain_order=True)
    sums = replicate_sums(group, merged["__units"].to_numpy().astype(np.float64),
                          merged.select(features).to_numpy().astype(np.float64),
                          replicates, seed)
    return groups, sums


def replicate_frame(groups: pl.DataFrame, sums: np.ndarray, features: Sequence[str]
                    ) -> pl.DataFrame:
    """One row per group x replicate: the group's keys, `replicate`, and the sums."""
    count, replicates, width = sums.shape  # no groups (a run stopped before any case) is 0
    frame = pl.DataFrame(sums.reshape(count * replicates, width), schema=list(features),
                         orient="row")
    index = np.repeat(np.arange(count), replicates)
    return pl.concat([groups[index], frame], how="horizontal").with_columns(
        replicate=pl.Series(np.tile(np.arange(replicates), count)))


def run_metrics(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    """The named metrics of a run: those with results, and those its suite declares."""
    return [r[0] for r in con.execute(
        "SELECT metric FROM named_metrics WHERE run_id = $run UNION "
        "SELECT metric FROM assertions WHERE run_id = $run AND metric IS NOT NULL "
        "ORDER BY 1", {"run": run_id}).fetchall()]


def run_derived(con: duckdb.DuckDBPyConnection, run_id: str) -> list[DerivedMetric]:
    """The run's derivedMetrics, as its suite was recorded."""
    [(suite,)] = con.execute("SELECT suite FROM runs WHERE run_id = ?", [run_id]).fetchall()
    return [DerivedMetric(**d) for d in (json.loads(suite or "{}").get("derived_metrics") or [])]


def units_sql(metrics: Sequence[str], run: str = "$run") -> str:
    """One row per test (or lone case) of run `run` x provider x prompt: its cases,
    passes, score sum and count, and each named metric's sum and weight."""
    filtered = ", ".join(
        f"SUM(sum) FILTER (metric = {sql_text(m)}) AS {quote('s:' + m)}, "
        f"SUM(weight) FILTER (metric = {sql_text(m)}) AS {quote('w:' + m)}" for m in metrics)
    sums = "".join(f", COALESCE(SUM({quote(p + m)}), 0) AS {quote(p + m)}"
                   for m in metrics for p in ("s:", "w:"))
    per_case = (f", mc AS (SELECT case_id, {filtered} FROM ({case_metrics_sql()}) "
                "GROUP BY case_id)") if metrics else ""
    return f"""
        WITH cs AS (
            SELECT c.case_id, c.provider, c.prompt, c.test_id,
                   CASE WHEN c.test_id IS NULL THEN c.case_id END AS solo, t.status, t.score
            FROM case_rows c JOIN test_results t USING (run_id, case_id)
            WHERE c.run_id = {run}){per_case}
        SELECT provider, prompt, COUNT(*)::DOUBLE AS __count,
               COUNT(*) FILTER (status = 'pass')::DOUBLE AS passed,
               COALESCE(SUM(score), 0) AS score_sum, COUNT(score)::DOUBLE AS score_n{sums}
        FROM cs {'LEFT JOIN mc USING (case_id)' if metrics else ''}
        GROUP BY provider, prompt, test_id, solo"""


def statistics_sql(metrics: Sequence[str], derived: Sequence[DerivedMetric],
                   keys: Sequence[str]) -> str:
    """Over `reps` (keys, __count, score sums, each metric's s: and w: sums): one row per
    key x statistic (metric, kind, value): mean_score, each named metric, each derived."""
    named = "".join(
        f" UNION ALL SELECT {', '.join(keys)}, {sql_text(m)}, 'named', "
        f"{quote('s:' + m)} / NULLIF({quote('w:' + m)}, 0) FROM reps" for m in metrics)
    query = (f"SELECT {', '.join(keys)}, 'mean_score' AS metric, 'test' AS kind, "
             f"score_sum / NULLIF(score_n, 0) AS value FROM reps{named}")
    if derived:
        base = ("SELECT *" + "".join(f", {quote('s:' + m)} AS {quote(m)}" for m in metrics)
                + " FROM reps")
        query += (f" UNION ALL SELECT {', '.join(keys)}, name, 'derived', value FROM "
                  f"({derived_over(base, metrics, derived, keys)})")
    return query


def interval_sql(statistics: str, keys: Sequence[str], level: float) -> str:
    tail = (1 - level) / 2
    return (f"SELECT {', '.join(keys)}, metric, kind, "
            f"quantile_cont(value, {tail!r}) AS value_low, "
            f"quantile_cont(value, {1 - tail!r}) AS value_high "
            f"FROM ({statistics}) GROUP BY ALL "
            f"ORDER BY kind DESC, metric, {' NULLS FIRST, '.join(keys)} NULLS FIRST")


def run_intervals(con: duckdb.DuckDBPyConnection, run_id: str, replicates: int = REPLICATES,
                  seed: int = SEED, level: float = LEVEL) -> pl.DataFrame:
    """provider, prompt, metric, kind, value_low, value_high: the percentile bootstrap
    interval of the mean score (metric `mean_score`, kind `test`), each named metric and
    each derived metric, per provider x prompt; a derived metric whose expression cannot
    be read over the run's metrics is left out."""
    metrics, derived = run_metrics(con, run_id), run_derived(con, run_id)
    features = TEST_SUMS + [p + m for m in metrics for p in ("s:", "w:")]
    groups, sums = profiles(con, units_sql(metrics), {"run": run_id}, _KEYS, features,
                            replicates, seed)
    reps = replicate_frame(groups, sums, features)
    local = duckdb.connect()
    local.register("reps", reps.to_arrow())
    try:
        query = statistics_sql(metrics, derived, (*_KEYS, "replicate"))
    except ValueError:  # a derived expression naming what the run does not have
        query = statistics_sql(metrics, (), (*_KEYS, "replicate"))
    intervals = local.sql(interval_sql(query, _KEYS, level)).pl()
    local.close()
    return intervals

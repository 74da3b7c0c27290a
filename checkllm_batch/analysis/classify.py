"""Classification metrics from a gold-label var and a predicted label, computed in SQL by the
`classification_report` and `confusion_matrix` table macros (store/views.py), with bootstrap
intervals of precision, recall and F1: each replicate's confusion counts (tests resampled,
as analysis/intervals.py does) go through the macro's own SQL (`report_sql`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import polars as pl

from ..store.views import report_sql
from .charts import Svg, heatmap
from .intervals import profiles, sql_text

if TYPE_CHECKING:
    from .database import Results

AVERAGES = ("macro avg", "micro avg")


@dataclass
class Classification:
    """`per_class`: provider, class, tp, fp, fn, support, precision, recall, f1, with the
    'macro avg' and 'micro avg' rows; `confusion`: provider, actual, predicted, n (a NULL
    predicted label is a missing prediction)."""

    per_class: pl.DataFrame
    confusion: pl.DataFrame

    @property
    def summary(self) -> pl.DataFrame:
        """One row per provider: accuracy, macro and micro precision / recall / F1."""
        averages = self.per_class.filter(pl.col("class").is_in(AVERAGES))
        wide = averages.with_columns(pl.col("class").str.replace(" avg", "")).pivot(
            "class", index="provider", values=["precision", "recall", "f1"],
            aggregate_function="first")
        wide = wide.rename({c: "_".join(reversed(c.split("_"))) for c in wide.columns
                            if c != "provider"})
        accuracy = self.confusion.group_by("provider").agg(
            cases=pl.col("n").sum(),
            accuracy=(pl.col("n").filter(pl.col("actual") == pl.col("predicted")).sum()
                      / pl.col("n").sum()))
        columns = ["provider", "cases", "accuracy"] + [
            f"{avg}_{m}" for avg in ("macro", "micro") for m in ("precision", "recall", "f1")]
        return accuracy.join(wide, on="provider", how="left", nulls_equal=True).select(
            columns).sort("provider", nulls_last=False)

    @property
    def providers(self) -> list[str | None]:
        return self.confusion["provider"].unique().sort(nulls_last=False).to_list()

    def _provider(self, provider: str | None) -> str | None:
        return provider if provider is not None or not self.providers else self.providers[0]

    def matrix(self, provider: str | None = None) -> pl.DataFrame:
        """The confusion matrix of one provider (the first if none given): a row per actual
        label, a column per predicted label ('(none)' for a missing prediction)."""
        rows = self.confusion.filter(pl.col("provider").eq_missing(self._provider(provider)))
        labels = sorted(set(rows["actual"].drop_nulls()) | set(rows["predicted"].drop_nulls()))
        rows = rows.with_columns(pl.col("predicted").fill_null("(none)"))
        columns = labels + (["(none)"] if "(none)" in rows["predicted"] else [])
        wide = pl.DataFrame({"actual": labels}).join(
            rows.pivot("predicted", index="actual", values="n", aggregate_function="sum"),
            on="actual", how="left")
        for c in columns:
            if c not in wide.columns:
                wide = wide.with_columns(pl.lit(0, pl.Int64).alias(c))
        return wide.select("actual", *columns).fill_null(0)

    def heatmap(self, provider: str | None = None) -> Svg:
        """The confusion matrix of one provider as an SVG heat map."""
        provider = self._provider(provider)
        matrix = self.matrix(provider)
        name = provider if provider is not None else "(no provider)"
        return heatmap(matrix["actual"].to_list(), matrix.columns[1:],
                       [list(r[1:]) for r in matrix.iter_rows()],
                       title=f"Confusion matrix: {name}")


def classification(results: Results, run_id: str, gold: str, predicted: str | None,
                   normalize: bool, intervals: dict | None = None) -> Classification:
    """The report; with `intervals` (replicates, seed, level), each precision / recall / F1
    with its bootstrap interval (precision_low, precision_high, ...)."""
    args = "?, predicted_path := ?, normalize_labels := ?"
    params = [gold, predicted, normalize, run_id]
    per_class = results.query(
        f"SELECT * EXCLUDE (run_id) FROM classification_report({args}) WHERE run_id = ? "
        "ORDER BY provider NULLS FIRST, class LIKE '% avg', class", params)
    confusion = results.query(
        f"SELECT * EXCLUDE (run_id) FROM confusion_matrix({args}) WHERE run_id = ? "
        "ORDER BY ALL NULLS FIRST", params)
    if intervals is not None and confusion.height:
        bounds = report_intervals(results.con, confusion, dict(zip(
            ("gold", "path", "norm", "run"), params)), **intervals)
        per_class = per_class.join(bounds, on=["provider", "class"], how="left",
                                   nulls_equal=True, maintain_order="left")
    return Classification(per_class, confusion)


_UNITS = """
    WITH l AS (SELECT l.provider, l.actual, l.predicted, c.test_id,
                      CASE WHEN c.test_id IS NULL THEN l.case_id END AS solo
               FROM labels($gold, predicted_path := $path, normalize_labels := $norm) l
               JOIN case_rows c USING (run_id, case_id) WHERE l.run_id = $run)
    SELECT provider, {pairs} FROM l GROUP BY provider, test_id, solo"""


def report_intervals(con: duckdb.DuckDBPyConnection, confusion: pl.DataFrame, params: dict,
                     replicates: int, seed: int, level: float) -> pl.DataFrame:
    """provider, class, precision_low / _high, recall_low / _high, f1_low / _high."""
    pairs = confusion.select("actual", "predicted").unique().sort(
        "actual", "predicted", nulls_last=False).rows()
    counts = ", ".join(
        f"COUNT(*) FILTER (actual = {sql_text(a)} AND predicted IS NOT DISTINCT FROM "
        f"{'NULL' if p is None else sql_text(p)})::DOUBLE AS \"{i}\""
        for i, (a, p) in enumerate(pairs))
    features = [str(i) for i in range(len(pairs))]
    groups, sums = profiles(con, _UNITS.format(pairs=counts), params, ("provider",),
                            features, replicates, seed)
    g, r, k = sums.shape
    reps = pl.DataFrame({
        "provider": groups["provider"].gather(np.repeat(np.arange(g), r * k)),
        "replicate": np.tile(np.repeat(np.arange(r), k), g),
        "actual": [a for a, _ in pairs] * (g * r), "predicted": [p for _, p in pairs] * (g * r),
        "n": sums.reshape(-1)}).filter(pl.col("n") > 0)
    tail = (1 - level) / 2
    bounds = ", ".join(f"quantile_cont({m}, {q!r}) AS {m}_{side}" for m in
                       ("precision", "recall", "f1") for side, q in (("low", tail),
                                                                      ("high", 1 - tail)))
    local = duckdb.connect()
    local.register("reps", reps.to_arrow())
    frame = local.sql(f"WITH l AS (FROM reps) {report_sql('l', ('replicate', 'provider'))}"
                      ).pl()
    local.register("report", frame.to_arrow())
    result = local.sql(f"SELECT provider, class, {bounds} FROM report GROUP BY ALL").pl()
    local.close()
    return result

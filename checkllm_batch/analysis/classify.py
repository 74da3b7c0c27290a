"""Classification metrics from a gold-label var and a predicted label, computed in SQL by the
`classification_report` and `confusion_matrix` table macros (store/views.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from .charts import Svg, heatmap

if TYPE_CHECKING:
    from .results import Results

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
                   normalize: bool) -> Classification:
    args = "?, predicted_path := ?, normalize_labels := ?"
    params = [gold, predicted, normalize, run_id]
    per_class = results.query(
        f"SELECT * EXCLUDE (run_id) FROM classification_report({args}) WHERE run_id = ? "
        "ORDER BY provider NULLS FIRST, class LIKE '% avg', class", params)
    confusion = results.query(
        f"SELECT * EXCLUDE (run_id) FROM confusion_matrix({args}) WHERE run_id = ? "
        "ORDER BY ALL NULLS FIRST", params)
    return Classification(per_class, confusion)

"""Combine assert-set members into the set's own result, per case (promptfoo §7.8, §10.1).

score = Σ w·s / Σ w over the members that are not metric-only (0 when Σ w = 0); pass = every
member passed, or score >= the set's threshold when it has one (0 included); a member error
makes the set an error. The set's row then counts in its test like any assertion.
"""

from __future__ import annotations

import polars as pl

from .verdict import in_order, verdict


def combine_sets(sets: pl.DataFrame, results: pl.DataFrame) -> pl.DataFrame:
    """One result row per (case, assert-set), with the columns of `results`."""
    members = results.filter(pl.col("parent_index").is_not_null())
    scoring = members.filter(~pl.col("metric_only")).sort("case_id", "assertion_index")
    weight = in_order(pl.col("weight"))
    agg = scoring.group_by("case_id", "test_index", "parent_index").agg(
        errors=(pl.col("status") == "error").sum(),
        all_pass=(pl.col("status") == "pass").all(),
        score=pl.when(weight > 0).then(in_order(pl.col("score") * pl.col("weight")) / weight)
        .otherwise(0.0),
        first_error=pl.col("reason").filter(pl.col("status") == "error").first(),
        first_fail=pl.col("reason").filter(pl.col("status") == "fail").first())
    cases = members.select("case_id", "test_index", "parent_index").unique()
    t = (cases.join(agg, on=["case_id", "test_index", "parent_index"], how="left")
         .join(sets.rename({"assertion_index": "parent_index"}),
               on=["test_index", "parent_index"], how="inner"))
    return t.select(
        "case_id", "test_index", key=pl.lit(-1, pl.Int32),
        **verdict(pl.col("score").fill_null(0.0)),
        assertion_index=pl.col("parent_index"), type="type", metric="metric", weight="weight",
        metric_only="metric_only", parent_index=pl.lit(None, pl.Int32))

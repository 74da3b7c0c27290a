"""Combine assert-set members into the set's own result, per case (promptfoo's assert-set:
`src/assertions/index.ts` scores the members with an AssertionsResult of their own).

A set is a small test over its members (`verdict.py`: weighted score, every member passing or
the set's threshold, a member error makes the set an error); its row then counts in its test
like any assertion, with the set's weight and metric.
"""

from __future__ import annotations

import polars as pl

from .plan import Plan
from .verdict import aggregate, verdict


def combine_sets(plan: Plan, results: pl.DataFrame) -> pl.DataFrame:
    """One result row per (case, assert-set), with the columns of `results`."""
    members = results.lazy().filter(pl.col("parent_index").is_not_null())
    by = ["case_id", "test_index", "parent_index"]
    t = (aggregate(members, by, plan.order).sort(by)
         .join(plan.sets.lazy().rename({"assertion_index": "parent_index"}),
               on=["test_index", "parent_index"], how="inner", maintain_order="left"))
    return t.select(
        "case_id", "test_index", key=pl.lit(-1, pl.Int32), **verdict(pl.col("score")),
        assertion_index=pl.col("parent_index"), type="type", metric="metric", weight="weight",
        metric_only="metric_only", parent_index=pl.lit(None, pl.Int32)).collect(engine="in-memory")

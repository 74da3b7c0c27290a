"""How a test (or an assert-set) passes: one rule, shared by both (SPEC §3)."""

from __future__ import annotations

import polars as pl


def in_order(x: pl.Expr) -> pl.Expr:
    """The sum of a group's x (nulls as 0) added row by row, as promptfoo adds each result to
    its total: Polars' `sum` adds in another order, and the last bit of a score can cross a
    threshold. A list's sum runs left to right (tests pin it)."""
    return x.fill_null(0.0).implode().list.sum()


def verdict(score: pl.Expr) -> dict[str, pl.Expr]:
    """status, pass, score and reason of a test (or an assert-set) from its score and the
    aggregate columns errors, all_pass, threshold, first_error and first_fail."""
    by_threshold = (score >= pl.col("threshold")) & ~score.is_nan()  # NaN meets no threshold
    passed = (pl.when(pl.col("threshold").is_not_null()).then(by_threshold)
              .otherwise(pl.col("all_pass").fill_null(True)))
    error = pl.col("errors").fill_null(0) > 0
    return {
        "status": pl.when(error).then(pl.lit("error")).when(passed).then(pl.lit("pass"))
        .otherwise(pl.lit("fail")),
        "pass": pl.when(error).then(None).otherwise(passed),
        "score": pl.when(error).then(None).otherwise(score),
        "reason": pl.when(error).then(pl.col("first_error"))
        .when(pl.col("threshold").is_not_null()).then(pl.format(
            "Aggregate score {} {} {} threshold", score.round(2),
            pl.when(by_threshold).then(pl.lit(">=")).otherwise(pl.lit("<")), pl.col("threshold")))
        .when(~passed).then(pl.col("first_fail")),
    }

"""How a test (or an assert-set) passes: one rule, shared by both, as promptfoo's
`src/assertions/assertionsResult.ts` (AssertionsResult) combines a test's or a set's results.

Over the result rows of a test's top-level assertions (or of a set's members), in the order
promptfoo adds them (`plan.adding_order`):
- score = Σ w·s / Σ w over the rows that are not metric-only, 0 when Σ w = 0; a test with no
  assertions at all scores 1 and passes ("No assertions");
- pass = every such row passed, or, with a threshold (0 included), score >= threshold;
- any row that errors, metric-only or not, makes the whole an error (promptfoo: the cell);
- any row `skipped` (a graded assertion of a case outside the judge sample, run/sample.py)
  makes the whole skipped, "not in the judge sample": neither pass nor fail, so rates count
  judged cases only; else any row `abstain` (no stage of a judge cascade was sure enough:
  judging/cascade.py), after errors, makes the whole `abstain`, left for a person;
- reason: the first error; with a threshold, "Aggregate score 0.33 < 0.5 threshold"; else
  the last failure's reason (promptfoo keeps overwriting it), or "All assertions passed".
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

import polars as pl

from ..assertions import text_of_distinct
from ..js.jsvalue import js_number

NOT_SAMPLED = "not in the judge sample"  # a skipped row's reason (run/sample.py)
# an abstained row's: no stage of a judge cascade was sure enough (judging/cascade.py)
ABSTAINED = "abstain: no stage of the judge cascade was sure enough; left for a person"


def in_order(x: pl.Expr) -> pl.Expr:
    """The sum of a group's x (nulls as 0) added row by row, as promptfoo adds each result to
    its total: Polars' `sum` adds in another order, and the last bit of a score can cross a
    threshold. A list's sum runs left to right (tests pin it)."""
    return x.fill_null(0.0).implode().list.sum()


def aggregate(rows: pl.LazyFrame, by: list[str], order: pl.DataFrame) -> pl.LazyFrame:
    """Per group `by` of result rows (with test_index), added in the plan's `order`: errors,
    all_pass, score, first_error, last_fail; groups in no particular order. `by` starts with
    the case id (never negative). Lazy: the caller collects it with what it joins it to."""
    scoring = ~pl.col("metric_only")
    weight = pl.when(scoring).then(pl.col("weight")).otherwise(0.0)
    status, reason, total = pl.col("status"), pl.col("reason"), pl.col("total")
    keys = ["test_index", "parent_index", "assertion_index"]
    # rows sorted by case, then `order` (one integer key: a sort on two columns costs 8x),
    # so each group's rows are in order and the cases sorted: a group-by over a sorted key
    # cuts slices (5x cheaper than hashing). A row without an order (none) comes first.
    span = int(order["order"].max() or 0) + 2  # type: ignore[arg-type]
    case = pl.col(by[0])
    return (rows.with_columns(pl.col("parent_index").fill_null(-1))
            .join(order.lazy(), on=keys, how="left")
            .sort(case.cast(pl.Int64) * span + pl.col("order").fill_null(-1) + 1,
                  maintain_order=True)
            .with_columns(case.set_sorted())
            .group_by(by).agg(
                errors=(status == "error").sum(), skipped=(status == "skipped").sum(),
                abstained=(status == "abstain").sum(),
                all_pass=((status == "pass") | ~scoring).all(),
                total=in_order(weight), weighted=in_order(pl.col("score") * weight),
                first_error=reason.filter(status == "error").first(),
                last_fail=reason.filter((status == "fail") & scoring).last())
            .select(*by, "errors", "skipped", "abstained", "all_pass",
                    score=pl.when(total > 0).then(pl.col("weighted") / total).otherwise(0.0),
                    first_error="first_error", last_fail="last_fail"))


def verdict(score: pl.Expr) -> dict[str, pl.Expr]:
    """status, pass, score and reason of a test (or an assert-set) from its score and the
    columns of `aggregate` (all null: no assertions) and `threshold`."""
    none = pl.col("errors").is_null()
    score = pl.when(none).then(1.0).otherwise(score)
    by_threshold = (score >= pl.col("threshold")) & ~score.is_nan()  # NaN meets no threshold
    thresholded = pl.col("threshold").is_not_null() & ~none
    passed = (pl.when(thresholded).then(by_threshold)
              .otherwise(pl.col("all_pass").fill_null(True)))
    skipped = pl.col("skipped").fill_null(0) > 0
    error = (pl.col("errors").fill_null(0) > 0) & ~skipped
    abstained = (pl.col("abstained").fill_null(0) > 0) & ~skipped & ~error
    unknown = error | skipped | abstained
    return {
        "status": pl.when(skipped).then(pl.lit("skipped")).when(error).then(pl.lit("error"))
        .when(abstained).then(pl.lit("abstain"))
        .when(passed).then(pl.lit("pass")).otherwise(pl.lit("fail")),
        "pass": pl.when(unknown).then(None).otherwise(passed),
        "score": pl.when(unknown).then(None).otherwise(score),
        "reason": pl.when(skipped).then(pl.lit(NOT_SAMPLED))
        .when(error).then(pl.col("first_error"))
        .when(abstained).then(pl.lit(ABSTAINED))
        .when(none).then(pl.lit("No assertions"))
        .when(thresholded).then(pl.format(
            "Aggregate score {} {} {} threshold", text_of_distinct(score, to_fixed),
            pl.when(by_threshold).then(pl.lit("≥")).otherwise(pl.lit("<")),
            text_of_distinct(pl.col("threshold"), js_number)))
        .when(~passed).then(pl.col("last_fail"))
        .otherwise(pl.lit("All assertions passed")),
    }


def to_fixed(value: float) -> str:
    """`value.toFixed(2)` as JavaScript prints it: the exact double, halves away from zero."""
    if not math.isfinite(value) or abs(value) >= 1e21:
        return js_number(value)
    text = str(Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
    return "0.00" if value == 0 else text

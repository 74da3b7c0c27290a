"""The one flagged row-wise fallback: run a Python check once per distinct value of a batch.

Some checks need a library to look at each value (a JSON parser, a schema validator, a
backtracking regex engine). They run here, over the *distinct* values of the batch only,
and are joined back to the rows, so repeated outputs cost nothing.
"""

from __future__ import annotations

from typing import Any, Callable

import polars as pl

Outcome = tuple[bool | None, str | None]  # (passed, detail); passed None means error
OUTCOME = pl.Struct({"ok": pl.Boolean, "detail": pl.String})


def over_distinct(expr: pl.Expr, check: Callable[[Any], Outcome]) -> pl.Expr:
    """A struct {ok, detail} per row, calling `check` once per distinct value of `expr`."""

    def run(values: pl.Series) -> pl.Series:
        uniq = values.unique()
        outcomes = [check(v) for v in uniq.to_list()]  # row-wise: one call per distinct value
        table = pl.DataFrame(
            {"v": uniq, "ok": [o[0] for o in outcomes], "detail": [o[1] for o in outcomes]},
            schema={"v": values.dtype, "ok": pl.Boolean, "detail": pl.String})
        joined = values.to_frame("v").join(table, on="v", how="left", nulls_equal=True,
                                           maintain_order="left")
        return joined.select(pl.struct("ok", "detail")).to_series()

    return expr.map_batches(run, return_dtype=OUTCOME)

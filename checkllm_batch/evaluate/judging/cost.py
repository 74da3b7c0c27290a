"""CheckLLM `cost`: the judge's cost for a case (the calls its graded assertions needed).

`cost` with `value:` (CheckLLM's form) or `source: judge` reads the judge cost; with
`threshold:` (promptfoo's form) or `source: provider` it reads the outputs' `cost` column
(assertions/provider.py).
"""

from __future__ import annotations

import polars as pl

from ...js import template
from ..plan import Planned
from .rows import judged_rows


def judge_cost(p: Planned, rows: pl.DataFrame, costs: pl.DataFrame) -> pl.DataFrame:
    """The result rows of the `cost` assertion `p` for `rows`, given `costs` (case_id, cost:
    what the batch's judge calls cost each case so far)."""
    if p.spec.value is not None:
        limit = template.text(p.spec.value, rows).cast(pl.Float64, strict=False)
    elif p.spec.threshold is not None:
        limit = pl.lit(float(p.spec.threshold))
    else:  # refused at parse time (cost's prepare); never compared with nothing
        raise ValueError("cost needs a value or a threshold: the maximum allowed")
    joined = rows.select("case_id", "test_index", limit.alias("limit")).join(
        costs, on="case_id", how="left")
    cost, limit = pl.col("cost").fill_null(0.0), pl.col("limit")
    return judged_rows(p, joined.select(
        "case_id", "test_index", passed=cost <= limit, score=(cost <= limit).cast(pl.Float64),
        reason=pl.format("judge cost {} USD (limit {})", cost.round(6), limit)))

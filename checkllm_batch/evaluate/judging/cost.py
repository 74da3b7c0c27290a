"""CheckLLM `cost`: the judge's cost for a case (the calls its graded assertions needed).

`cost` with `value:` (CheckLLM's form) or `source: judge` reads the judge cost; with
`threshold:` (promptfoo's form) or `source: provider` it reads the outputs' `cost` column
(assertions/provider.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ...assertions.registry import Kind
from ...js import template
from ..outcome import judged_rows

if TYPE_CHECKING:
    from ..plan import Planned
    from .hook import JudgeHook

def judge_cost(hook: JudgeHook, p: Planned, rows: pl.DataFrame) -> pl.DataFrame:

    for q in hook.plan.assertions:  # grade the others first (memoised: graded once a batch)
        if q.kind is Kind.JUDGE:
            hook(q, rows if q.tests is None else rows.filter(pl.col("test_index").is_in(q.tests)))
    if p.spec.value is not None:
        limit = template.text(p.spec.value, rows).cast(pl.Float64, strict=False)
    elif p.spec.threshold is not None:
        limit = pl.lit(float(p.spec.threshold))
    else:  # refused at parse time (cost's prepare); never compared with nothing
        raise ValueError("cost needs a value or a threshold: the maximum allowed")
    costs = (pl.concat(hook.case_cost).group_by("case_id").agg(pl.col("cost").sum())
             if hook.case_cost else pl.DataFrame(schema={"case_id": pl.Int64, "cost": pl.Float64}))
    joined = rows.select("case_id", "test_index", limit.alias("limit")).join(
        costs, on="case_id", how="left")
    cost, limit = pl.col("cost").fill_null(0.0), pl.col("limit")
    return judged_rows(p, joined.select(
        "case_id", "test_index", passed=cost <= limit, score=(cost <= limit).cast(pl.Float64),
        reason=pl.format("judge cost {} USD (limit {})", cost.round(6), limit)))

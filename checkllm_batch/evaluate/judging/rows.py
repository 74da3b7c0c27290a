"""A judged assertion's result rows: the outcomes a model-graded type returns (passed,
score, reason; passed null = error) through the rule every type shares (evaluate/outcome.py),
with judge scores clipped to [0, 1] when negated, as promptfoo's invertScore does."""

from __future__ import annotations

import polars as pl

from ..outcome import RESULT_SCHEMA, Reasons, Stop, outcome
from ..plan import Planned
from .jury import VOTES


def judged_rows(p: Planned, outcomes: pl.DataFrame) -> pl.DataFrame:
    """A judged assertion's outcomes (case_id, test_index, passed, score, reason, and
    `stopped`: rows that ended before the judge, e.g. a null output) as result rows; a
    jury's or repeats' `votes` (jury.py) and a verdict's `confidence` are kept."""
    reason, negate = pl.col("reason"), p.spec.negate
    negated = pl.concat_str([pl.lit(f"Expected output to not pass {p.spec.type}: "),
                             reason.fill_null("")])
    stops = [Stop(pl.col("stopped").fill_null(False), "fail", reason)] \
        if "stopped" in outcomes.columns else []
    fields = outcome(pl.col("passed"), pl.col("score"),
                     Reasons(failed=negated if negate else reason, error=reason, other=reason),
                     negate=negate, clip=True, stops=stops)
    votes = [pl.col("votes").cast(VOTES)] if "votes" in outcomes.columns else []
    if "confidence" in outcomes.columns:  # the verdict token's probability (judge top_logprobs)
        votes.append(pl.col("confidence").cast(pl.Float64))
    return outcomes.select(
        "case_id", pl.col("test_index").cast(pl.Int32), pl.lit(p.key, pl.Int32).alias("key"),
        *(e.alias(name) for name, e in fields.items()), *votes).cast(pl.Schema(RESULT_SCHEMA))

"""How an assertion's row ends: status, pass, score and reason from the type's raw verdict.

One rule for every kind of type (vector, distinct, judge, judged across cases):
- a row that ends before its verdict is read (`Stop`): a value that cannot be used is an
  error, a null or non-text output fails, whatever the negation;
- a null verdict is an error, with the reason saying why;
- `not-` flips pass and turns the score into 1 - score (clipped to [0, 1] for judge scores,
  as promptfoo's invertScore does);
- a failing row shows its failure reason, any other row its plain reason.
How a test or an assert-set combines these rows is `evaluate/verdict.py`; a judged
assertion's rows are made by `evaluate/judging/rows.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl

RESULT_SCHEMA = {"case_id": pl.Int64, "test_index": pl.Int32, "key": pl.Int32,
                 "status": pl.String, "pass": pl.Boolean, "score": pl.Float64, "reason": pl.String}


@dataclass(frozen=True)
class Stop:
    """Rows that end before the verdict is read: `status` "error" (no pass, no score) or
    "fail" (score 0)."""

    when: pl.Expr
    status: str
    reason: pl.Expr


@dataclass(frozen=True)
class Reasons:
    """A row's reason: on failing rows, on erroring rows (null verdict), on the others."""

    failed: pl.Expr
    error: pl.Expr
    other: pl.Expr


def outcome(raw: pl.Expr, score: pl.Expr, reasons: Reasons, *, negate: bool,
            clip: bool = False, stops: Sequence[Stop] = ()) -> dict[str, pl.Expr]:
    """status, pass, score and reason of each row from the raw verdict (`raw` null: error)
    and its score; `stops` are checked first, in order."""
    passed = ~raw if negate else raw
    if negate:
        score = 1.0 - score
        score = score.clip(0.0, 1.0) if clip else score
    status = _chain(stops, lambda s: pl.lit(s.status),
                    pl.when(raw.is_null()).then(pl.lit("error"))
                    .when(passed).then(pl.lit("pass")).otherwise(pl.lit("fail")))
    pass_ = _chain(stops, lambda s: pl.lit(None if s.status == "error" else False, pl.Boolean),
                   passed)
    score_out = _chain(stops, lambda s: pl.lit(None if s.status == "error" else 0.0, pl.Float64),
                       pl.when(raw.is_null()).then(None).otherwise(score))
    reason = _chain(stops, lambda s: s.reason,
                    pl.when(raw.is_null()).then(reasons.error)
                    .when(~passed).then(reasons.failed).otherwise(reasons.other))
    return {"status": status, "pass": pass_, "score": score_out, "reason": reason}


def stopped(raw: pl.Expr, stops: Sequence[Stop]) -> pl.Expr:
    """Rows without a verdict of their own: stopped early or erroring."""
    return pl.any_horizontal([s.when for s in stops] + [raw.is_null()])


def _chain(stops: Sequence[Stop], value: Callable[[Stop], pl.Expr], otherwise: pl.Expr
           ) -> pl.Expr:
    """`value(stop)` on the rows of the first stop that holds, else `otherwise`."""
    for stop in reversed(stops):
        otherwise = pl.when(stop.when).then(value(stop)).otherwise(otherwise)
    return otherwise


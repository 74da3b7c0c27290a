"""How sure a judge was of a verdict, in [0.5, 1] for a two-sided verdict: what a cascade
stage's threshold is compared with (certify.py).

- `repeats` or a jury: the share of the gradings (each juror x repeat with a verdict) on
  the verdict's side: N repeats at a temperature above 0 ("simulated annotators"), or the
  jurors' vote share (here);
- `logprobs`: the probability the judge gave its verdict token, read with the reply
  (assertions/graded/replies.py, `verdict_probability`).
"""

from __future__ import annotations

import polars as pl


def vote_confidence(votes: pl.Expr, verdict: pl.Expr) -> pl.Expr:
    """The share of a result's gradings (`votes`: list of struct with `pass`, as the assertion
    reads them) on the side of its `verdict`; null when no grading gave a verdict or the
    verdict is null (an error has no confidence)."""
    agrees = votes.list.eval(pl.element().struct.field("pass").cast(pl.Int8))
    given = agrees.list.drop_nulls()
    passing = given.list.sum().cast(pl.Float64)
    share = pl.when(verdict).then(passing).otherwise(given.list.len() - passing) \
        / given.list.len()
    return pl.when(verdict.is_not_null() & (given.list.len() > 0)).then(share)

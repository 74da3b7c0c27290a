"""Provider metadata: perplexity and perplexity-score from the case's `logprobs` column."""

from __future__ import annotations

import polars as pl

from .registry import Ctx, Value, Verdict, assertion


def _perplexity() -> pl.Expr:
    logprobs = pl.col("logprobs")
    return (-logprobs.list.mean()).exp()


def _missing() -> pl.Expr:
    return pl.col("logprobs").is_null() | (pl.col("logprobs").list.len() == 0)


MISSING = "no logprobs recorded for this case (perplexity needs per-token log probabilities)"


@assertion("perplexity", value=Value.NONE, needs_text=False)
def perplexity(ctx: Ctx) -> Verdict:
    """exp(-mean(logprobs)) is at most the threshold; no threshold: passes when logprobs exist."""
    ppl = _perplexity()
    t = ctx.threshold
    raw = pl.lit(not ctx.spec.negate) if t is None else ppl <= t  # promptfoo: no threshold passes
    detail = pl.when(_missing()).then(pl.lit(MISSING)).otherwise(
        pl.format("perplexity {}", ppl.round(4)))
    return Verdict(pl.when(_missing()).then(None).otherwise(raw),
                   "have perplexity" + (f" <= {t:g}" if t is not None else ""), detail=detail)


@assertion("perplexity-score", value=Value.NONE, needs_text=False)
def perplexity_score(ctx: Ctx) -> Verdict:
    """1 / (1 + perplexity) is at least the threshold (score in (0, 0.5])."""
    score = 1.0 / (1.0 + _perplexity())
    t = ctx.threshold
    raw = pl.lit(not ctx.spec.negate) if t is None else score >= t
    detail = pl.when(_missing()).then(pl.lit(MISSING)).otherwise(
        pl.format("perplexity score {}", score.round(4)))
    return Verdict(pl.when(_missing()).then(None).otherwise(raw),
                   "have perplexity score" + (f" >= {t:g}" if t is not None else ""),
                   score=score, detail=detail)

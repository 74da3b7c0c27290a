"""Provider metadata (docs/assertions/provider.md): checks on what the provider reported with
the output: the latency and cost columns, perplexity from the `logprobs` column."""

from __future__ import annotations

from typing import Any

import polars as pl

from ..suites.model import AssertionSpec
from .batch.values import number
from .compiled import Ctx, Verdict
from .registry import Value, assertion, promptkit_names


def _limit(value: Any, spec: AssertionSpec) -> float:
    """The maximum, from `threshold` (promptfoo) or `value` (CheckLLM)."""
    limit = number(spec.threshold if spec.threshold is not None else value)
    if limit is None:
        raise ValueError("needs a numeric threshold (or value): the maximum allowed")
    return limit


def _at_most(column: str, unit: str, ctx: Ctx) -> Verdict:
    limit = ctx.prepared
    measured = pl.col(column).cast(pl.Float64)
    passed = pl.when(measured.is_null()).then(None).otherwise(measured <= limit)
    # the judge's cost is checked elsewhere (evaluate/judging/cost.py); here it is the provider's
    name = "provider's cost (the cost column)" if column == "cost" else column
    detail = (pl.when(measured.is_null()).then(pl.lit(f"no {name} recorded for this case"))
              .otherwise(pl.format(f"{name} {{}}{unit}", measured)))
    verb = "take" if unit == " ms" else "cost"
    return Verdict(passed, ctx.column(lambda n: f"{verb} at most {n:g}{unit}", pl.String),
                   detail=detail)


@assertion("latency", value=Value.OPTIONAL, needs_text=False, prepare=_limit, prepared_dtype=pl.Float64,
           csv_threshold=0.75)
def latency(ctx: Ctx) -> Verdict:
    """The case's `latency_ms` is at most the threshold (or value), in milliseconds."""
    return _at_most("latency_ms", " ms", ctx)


def reads_judge_cost(spec: AssertionSpec) -> bool:
    """CheckLLM's form (`value:` without `threshold:`, or `source: judge`) checks the judge's
    cost for the case; promptfoo's (`threshold:`, or `source: provider`) the `cost` column."""
    source = spec.args.get("source")
    return source == "judge" or (source is None and spec.threshold is None)


@assertion("cost", value=Value.OPTIONAL, needs_text=False, prepare=_limit, prepared_dtype=pl.Float64,
           fields=("source",),
           judge_cost=reads_judge_cost, csv_threshold=0.75)
def cost(ctx: Ctx) -> Verdict:
    """The case's recorded `cost` is at most the threshold (or value), in USD.

    CheckLLM's form (`value:`, or `source: judge`) checks the judge's cost for the case
    instead: the engine hands it to the judge (evaluate/judging/cost.py)."""
    return _at_most("cost", "", ctx)


def _perplexity() -> pl.Expr:
    """exp(-mean): a null log probability adds 0 to the sum but counts, as in promptfoo's sum."""
    logprobs = pl.col("logprobs")
    return (-(logprobs.list.sum() / logprobs.list.len())).exp()


def _missing() -> pl.Expr:
    return pl.col("logprobs").is_null() | (pl.col("logprobs").list.len() == 0)


MISSING = "no logprobs recorded for this case (perplexity needs per-token log probabilities)"


@assertion("perplexity", value=Value.NONE, needs_text=False, csv_threshold=0.75)
def perplexity(ctx: Ctx) -> Verdict:
    """exp(-mean(logprobs)) is at most the threshold; no threshold: passes when logprobs exist."""
    ppl = _perplexity()
    t = ctx.threshold
    raw = pl.lit(not ctx.spec.negate) if t is None else ppl <= t  # promptfoo: no threshold passes
    detail = pl.when(_missing()).then(pl.lit(MISSING)).otherwise(
        pl.format("perplexity {}", ppl.round(4)))
    return Verdict(pl.when(_missing()).then(None).otherwise(raw),
                   "have perplexity" + (f" <= {t:g}" if t is not None else ""), detail=detail)


@assertion("perplexity-score", value=Value.NONE, needs_text=False, csv_threshold=0.75)
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


# PromptKit's name for latency (assertions/reading/promptkit.py translates `type` + `params`)
promptkit_names("latency", "latency_budget", params={"max_ms": "threshold"})

"""Edit distance checks, computed by rapidfuzz over the whole batch in one C++ call."""

from __future__ import annotations

import numpy as np
import polars as pl
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from .pool import workers
from .registry import Ctx, Verdict, assertion
from .text import quoted

_ASTRAL = r"[\x{10000}-\x{10FFFF}]"


def _utf16(text: str) -> list[int]:
    return memoryview(text.encode("utf-16-le")).cast("H").tolist()


def _distances(pairs: pl.Series) -> pl.Series:
    """Levenshtein distance of each (a, b) pair, in one rapidfuzz call on the cores this
    process may use ($CHECKLLM_WORKERS: 1 in a cluster task)."""
    left = pairs.struct.field("a").fill_null("")
    right = pairs.struct.field("b").fill_null("")
    scores = process.cpdist(left.to_list(), right.to_list(), scorer=Levenshtein.distance,
                            workers=workers(), dtype=np.float64)
    # promptfoo counts UTF-16 code units: redo the few rows holding astral characters.
    non_ascii = (left.str.len_bytes() != left.str.len_chars()) | (
        right.str.len_bytes() != right.str.len_chars())
    if non_ascii.any():  # the regex only where some character is not ASCII
        rows = non_ascii.arg_true()
        astral = left.gather(rows).str.contains(_ASTRAL) | right.gather(rows).str.contains(_ASTRAL)
        for i in rows.filter(astral).to_list():  # row-wise: only rows holding astral characters
            scores[i] = Levenshtein.distance(_utf16(left[i]), _utf16(right[i]))
    return pl.Series(scores, dtype=pl.Float64)


def _string(value, spec) -> None:
    if isinstance(value, (dict, list)) or value is None:
        raise ValueError("value must be a string or number")


def _value(ctx: Ctx) -> pl.Expr:
    return ctx.value


def _distance(ctx: Ctx, value: pl.Expr) -> pl.Expr:
    """Levenshtein distance between the output and the value in UTF-16 code units, computed
    once per batch and shared by every assertion comparing the same pair."""
    what = ctx.spec.value
    return ctx.once(pl.struct(a=ctx.output, b=value).map_batches(
        _distances, return_dtype=pl.Float64),
        shared=f"levenshtein(output, {what!r})")


def _utf16_length(text: pl.Expr) -> pl.Expr:
    return text.str.len_chars() + text.str.count_matches(_ASTRAL)


@assertion("levenshtein", default_threshold=5.0, prepare=_string)
def levenshtein(ctx: Ctx) -> Verdict:
    """Levenshtein edit distance to the value is at most the threshold (default 5)."""
    value = _value(ctx)
    distance = _distance(ctx, value)
    return Verdict(distance <= ctx.threshold,
                   pl.concat_str([pl.lit(f"be within edit distance {ctx.threshold:g} of "),
                                  quoted(value)]),
                   detail=pl.format("distance {}", distance.cast(pl.Int64)))


@assertion("similarity", default_threshold=0.8, value_aliases=("reference",), prepare=_string)
def similarity(ctx: Ctx) -> Verdict:
    """CheckLLM: normalised Levenshtein similarity (1 - distance / longer length) >= threshold."""
    value = _value(ctx)
    longer = pl.max_horizontal(_utf16_length(ctx.output.fill_null("")), _utf16_length(value))
    ratio = pl.when(longer == 0).then(1.0).otherwise(1.0 - _distance(ctx, value) / longer)
    return Verdict(ratio >= ctx.threshold,
                   pl.concat_str([pl.lit(f"have similarity >= {ctx.threshold:g} to "),
                                  quoted(value)]),
                   score=ratio, detail=pl.format("similarity {}", ratio.round(4)))

"""Edit distance checks, computed by rapidfuzz over the whole batch in one C++ call."""

from __future__ import annotations

import numpy as np
import polars as pl
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from .registry import Ctx, Verdict, assertion
from .text import js_string, quoted

_ASTRAL = r"[\x{10000}-\x{10FFFF}]"


def _utf16(text: str) -> list[int]:
    return memoryview(text.encode("utf-16-le")).cast("H").tolist()


def _pairwise(scorer, utf16: bool = False, **kwargs):
    """A batch function: the scorer over (output, value) pairs, on both cores."""

    def run(pairs: pl.Series) -> pl.Series:
        left = pairs.struct.field("a").fill_null("")
        right = pairs.struct.field("b").fill_null("")
        scores = process.cpdist(left.to_list(), right.to_list(), scorer=scorer, workers=-1,
                                dtype=np.float64, **kwargs)
        if utf16:  # promptfoo counts UTF-16 code units: redo the few rows with astral chars
            pairs_ = pl.DataFrame({"a": left, "b": right})
            non_ascii = (pairs_["a"].str.len_bytes() != pairs_["a"].str.len_chars()) | (
                pairs_["b"].str.len_bytes() != pairs_["b"].str.len_chars())
            astral = np.zeros(len(left), dtype=bool)
            if non_ascii.any():  # the regex only where a character is not ASCII
                rows = non_ascii.arg_true()
                astral[rows.to_numpy()] = (left.gather(rows).str.contains(_ASTRAL)
                                           | right.gather(rows).str.contains(_ASTRAL)).to_numpy()
            for i in np.flatnonzero(astral):  # row-wise: only rows holding astral characters
                scores[i] = scorer(_utf16(left[int(i)]), _utf16(right[int(i)]), **kwargs)
        return pl.Series(scores, dtype=pl.Float64)

    return run


def _string(value, spec) -> None:
    if isinstance(value, (dict, list)) or value is None:
        raise ValueError("value must be a string or number")


def _value(ctx: Ctx) -> pl.Expr:
    return pl.lit(js_string(ctx.literal)) if ctx.literal is not None else ctx.value.cast(pl.String)


@assertion("levenshtein", default_threshold=5.0, prepare=_string)
def levenshtein(ctx: Ctx) -> Verdict:
    """Levenshtein edit distance to the value is at most the threshold (default 5)."""
    value = _value(ctx)
    threshold = ctx.threshold
    # score_cutoff: rapidfuzz stops once the distance exceeds the threshold (banded, fast);
    # it then reports threshold + 1, so the reason says "more than" instead of a number.
    distance = ctx.once(pl.struct(a=ctx.output, b=value).map_batches(
        _pairwise(Levenshtein.distance, utf16=True, score_cutoff=int(threshold)),
        return_dtype=pl.Float64))
    shown = pl.when(distance > threshold).then(pl.lit(f"distance > {threshold:g}")).otherwise(
        pl.format("distance {}", distance.cast(pl.Int64)))
    return Verdict(distance <= threshold,
                   pl.concat_str([pl.lit(f"be within edit distance {threshold:g} of "),
                                  quoted(value)]),
                   detail=shown)


@assertion("similarity", default_threshold=0.8, value_aliases=("reference",), prepare=_string)
def similarity(ctx: Ctx) -> Verdict:
    """CheckLLM: normalised Levenshtein similarity (1 - distance / longer length) >= threshold."""
    value = _value(ctx)
    ratio = ctx.once(pl.struct(a=ctx.output, b=value).map_batches(
        _pairwise(Levenshtein.normalized_similarity), return_dtype=pl.Float64))
    return Verdict(ratio >= ctx.threshold,
                   pl.concat_str([pl.lit(f"have similarity >= {ctx.threshold:g} to "),
                                  quoted(value)]),
                   score=ratio, detail=pl.format("similarity {}", ratio.round(4)))

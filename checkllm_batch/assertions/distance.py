"""Edit distance checks, computed by rapidfuzz over the whole batch in C++ calls on all cores."""

from __future__ import annotations

import numpy as np
import polars as pl

from .batch.distinct import per_distinct
from .batch.pool import workers
from .compiled import Ctx, Verdict
from .registry import assertion
from .text import quoting

_ASTRAL = r"[\x{10000}-\x{10FFFF}]"


def _utf16(text: str) -> list[int]:
    return memoryview(text.encode("utf-16-le")).cast("H").tolist()


# Within this many edits rapidfuzz's banded algorithm fits the band (2k + 1 cells) in one
# 64-bit word: about 5x cheaper than a full distance on 500-character texts; within the
# second, in two words.
BANDS = (31, 63)


def _exact_distances(left: list[str], right: list[str]) -> np.ndarray:
    """The exact Levenshtein distance of each pair (rapidfuzz on the cores this process may
    use: $CHECKLLM_WORKERS, 1 in a cluster task), at a cost that grows with the distance:
    a banded pass (`score_cutoff`) settles every pair within BANDS[0] edits (a pair beyond
    gets BANDS[0] + 1), a wider one the pairs beyond that within BANDS[1], then only the
    pairs beyond both are computed in full. Scores and reasons quote the exact distance on
    every row, so the far pairs are computed, only not in full where a band settles them.
    On the benchmark's 100,000 pairs (a quarter beyond 31 edits, a tenth beyond 63) the
    second band takes the passes from 0.46 to 0.39 CPU-s."""
    from rapidfuzz import process  # here, not at the top: only these types need it
    from rapidfuzz.distance import Levenshtein

    scores = process.cpdist(left, right, scorer=Levenshtein.distance, score_cutoff=BANDS[0],
                            workers=workers(), dtype=np.int64)
    for band, cutoff in zip(BANDS, (*BANDS[1:], None)):
        far = np.flatnonzero(scores > band)
        if not len(far):
            break
        scores[far] = process.cpdist([left[i] for i in far], [right[i] for i in far],
                                     scorer=Levenshtein.distance, score_cutoff=cutoff,
                                     workers=workers(), dtype=np.int64)
    return scores


DISTANCE = pl.Struct({"distance": pl.Float64, "longer": pl.Int64})


def _distances(pairs: pl.Series) -> pl.Series:
    """{distance, longer} of each (a, b) pair, computed once per distinct pair."""
    return per_distinct(pairs, _distinct_distances).to_struct()


def _distinct_distances(pairs: pl.Series) -> pl.DataFrame:
    """The Levenshtein distance and the longer length of each (a, b) pair, in UTF-16 code
    units as promptfoo counts them; the distances in rapidfuzz calls on all cores."""
    from rapidfuzz.distance import Levenshtein

    left = pairs.struct.field("a").fill_null("")
    right = pairs.struct.field("b").fill_null("")
    scores = _exact_distances(left.to_list(), right.to_list()).astype(np.float64)
    chars_left, chars_right = left.str.len_chars(), right.str.len_chars()
    lengths = np.maximum(chars_left.to_numpy(), chars_right.to_numpy()).astype(np.int64)
    non_ascii = (left.str.len_bytes() != chars_left) | (right.str.len_bytes() != chars_right)
    if non_ascii.any():  # the regex only where some character is not ASCII
        rows = non_ascii.arg_true()
        astral = left.gather(rows).str.contains(_ASTRAL) | right.gather(rows).str.contains(_ASTRAL)
        for i in rows.filter(astral).to_list():  # per-distinct: pairs with astral characters
            a, b = _utf16(left[i]), _utf16(right[i])
            scores[i], lengths[i] = Levenshtein.distance(a, b), max(len(a), len(b))
    return pl.DataFrame({"distance": scores, "longer": lengths})


def _string(value, spec) -> None:
    if not isinstance(value, str):
        raise ValueError("value must be a string (promptfoo rejects a number here)")


def _value(ctx: Ctx) -> pl.Expr:
    return ctx.value


def _distance(ctx: Ctx, value: pl.Expr) -> pl.Expr:
    """{distance, longer} between the output and the value in UTF-16 code units, computed
    once per batch and shared by every assertion comparing the same pair."""
    what = ctx.spec.value
    return ctx.once(pl.struct(a=ctx.output, b=value).map_batches(
        _distances, return_dtype=DISTANCE),
        shared=f"levenshtein(output, {what!r})")


@assertion("levenshtein", default_threshold=5.0, prepare=_string, csv_threshold=0.75)
def levenshtein(ctx: Ctx) -> Verdict:
    """Levenshtein edit distance to the value is at most the threshold (default 5)."""
    value = _value(ctx)
    distance = _distance(ctx, value).struct.field("distance")
    within = ctx.once(distance <= ctx.threshold)
    return Verdict(within, quoting(ctx, within, f"be within edit distance {ctx.threshold:g} of ",
                                   value),
                   detail=pl.format("distance {}", distance.cast(pl.Int64)))


@assertion("similarity", default_threshold=0.8, value_aliases=("reference",), prepare=_string,
           csv_threshold=0.8)
def similarity(ctx: Ctx) -> Verdict:
    """CheckLLM: normalised Levenshtein similarity (1 - distance / longer length) >= threshold."""
    value = _value(ctx)
    pair = _distance(ctx, value)
    longer, distance = pair.struct.field("longer"), pair.struct.field("distance")
    ratio = pl.when(longer == 0).then(1.0).otherwise(1.0 - distance / longer)
    close = ctx.once(ratio >= ctx.threshold)
    return Verdict(close, quoting(ctx, close, f"have similarity >= {ctx.threshold:g} to ", value),
                   score=ratio, detail=pl.format("similarity {}", ratio.round(4)))

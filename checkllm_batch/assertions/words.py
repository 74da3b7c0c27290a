"""Text checks: word-count, finish-reason, is-refusal. All vectorised Polars expressions."""

from __future__ import annotations

from typing import Any

import polars as pl

from ._support.refusal import PHRASES, PREFIXES
from .registry import Ctx, Value, Verdict, assertion

# JavaScript's \s (what promptfoo splits words on), as a Rust regex class.
JS_SPACE = r"\t\n\x0B\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}" \
           r"\x{3000}\x{feff}"
WORD = f"[^{JS_SPACE}]+"


def _bound(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    return int(value)


def _word_range(value: Any, spec: Any) -> tuple[int | None, int | None]:
    """(min, max) inclusive; an exact count gives min == max."""
    if isinstance(value, dict):
        unknown = set(value) - {"min", "max"}
        if unknown or not value:
            raise ValueError("value must be a number or a mapping with `min` and/or `max`")
        low, high = _bound(value.get("min"), "min"), _bound(value.get("max"), "max")
        if low is not None and high is not None and low > high:
            raise ValueError(f"min ({low}) must not exceed max ({high})")
        return low, high
    exact = _bound(value, "value")
    if exact is None:
        raise ValueError("value must be a number or a mapping with `min` and/or `max`")
    return exact, exact


def _words_expect(bounds: tuple[int | None, int | None]) -> str:
    low, high = bounds
    if low == high:
        return f"have exactly {low} words"
    return "have " + " and ".join(
        s for s in (low is not None and f"at least {low}", high is not None and f"at most {high}")
        if s) + " words"


@assertion("word-count", prepare=_word_range)
def word_count(ctx: Ctx) -> Verdict:
    """The number of whitespace-separated words equals the value, or lies in [min, max]."""
    low, high = (ctx.column(lambda b, i=i: b[i], pl.Int64) for i in (0, 1))
    words = ctx.output.str.count_matches(WORD)
    within = (low.is_null() | (words >= low)) & (high.is_null() | (words <= high))
    return Verdict(within, ctx.column(_words_expect, pl.String),
                   detail=pl.format("{} words", words))


def _reason(value: Any, spec: Any) -> str:
    if isinstance(value, (dict, list)) or value is None or str(value) == "":
        raise ValueError("value must be a finish reason such as stop, length or tool_calls")
    return str(value)


@assertion("finish-reason", needs_text=False, prepare=_reason, prepared_dtype=pl.String)
def finish_reason(ctx: Ctx) -> Verdict:
    """The case's `finish_reason` equals the value, ignoring case."""
    recorded = pl.col("finish_reason")
    same = recorded.str.to_lowercase() == ctx.prepared.str.to_lowercase()
    detail = (pl.when(recorded.is_null())
              .then(pl.lit("no finish_reason recorded for this case"))
              .otherwise(pl.format('finish reason "{}"', recorded)))
    return Verdict(pl.when(recorded.is_null()).then(None).otherwise(same),
                   pl.format('stop with finish reason "{}"', ctx.prepared), detail=detail)


def _literal_alternation(items: tuple[str, ...]) -> str:
    return "|".join(_escape(s) for s in sorted(items, key=len, reverse=True))


def _escape(text: str) -> str:
    return "".join("\\" + c if c in r".^$*+?()[]{}|\-" else c for c in text)


_REFUSAL = f"(?-u:\\b)(?:{_literal_alternation(PHRASES)})(?-u:\\b)"


@assertion("is-refusal", value=Value.NONE, needs_text=False)
def is_refusal(ctx: Ctx) -> Verdict:
    """The output reads as a refusal (promptfoo's prefixes and phrases); empty counts as one."""
    text = ctx.output.str.to_lowercase().str.strip_chars(JS_CHARS).str.replace_all("[\u2018\u2019]", "'")
    refused = (pl.any_horizontal([text.str.starts_with(p) for p in PREFIXES])
               | text.str.contains(_REFUSAL))
    is_text = pl.col("output_kind") == "text"
    empty = text.str.len_chars() == 0
    negate = ctx.spec.negate
    # promptfoo: a non-text output passes with score 0 either way; an empty one is a refusal
    # that scores 0 even when it passes. Scores here are before the engine's negation.
    kind = pl.col("output_kind")
    raw = (pl.when(kind == "json").then(pl.lit(not negate)).when(kind == "null").then(pl.lit(negate))
           .when(empty).then(True).otherwise(refused))
    zero = 1.0 if negate else 0.0
    score = (pl.when(~is_text | empty).then(zero)
             .otherwise(refused.cast(pl.Float64)))
    detail = (pl.when(pl.col("output_kind") == "json")
              .then(pl.lit("output is not text: not checked"))
              .when(pl.col("output_kind") == "null").then(pl.lit("output is null"))
              .when(empty).then(pl.lit("empty output counts as a refusal")))
    return Verdict(raw, "be a refusal", score=score, detail=detail)


JS_CHARS = " \t\n\x0b\x0c\r\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008" \
           "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"

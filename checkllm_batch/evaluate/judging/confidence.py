"""How sure a judge was of a verdict, in [0.5, 1] for a two-sided verdict: what a cascade
stage's threshold is compared with (certify.py).

- `logprobs`: the probability the judge gave its verdict token, normalised over the pass and
  fail tokens among that position's `top_logprobs` (the JSON `pass` value's token, or for a
  free-text reply the last token that reads as a verdict word: Y / N, yes / no, ...);
- `repeats` or a jury: the share of the gradings (each juror x repeat with a verdict) on
  the verdict's side: N repeats at a temperature above 0 ("simulated annotators"), or the
  jurors' vote share.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable

import polars as pl

PASS_WORDS = frozenset({"true", "yes", "y", "pass", "passed"})
FAIL_WORDS = frozenset({"false", "no", "n", "fail", "failed"})
_PASS_KEY = re.compile(r'"pass"\s*:\s*$')

# a reply's logprobs: each generated token with its logprob and its top alternatives
Token = dict[str, Any]  # {"token": str, "logprob": float, "top_logprobs": [{token, logprob}]}


def side(token: str) -> bool | None:
    """True / False for a token that reads as a pass / fail word, None for any other."""
    word = token.strip().strip('"\'.,:;!()[]{}').lower()
    return True if word in PASS_WORDS else False if word in FAIL_WORDS else None


def verdict_position(tokens: list[Token]) -> int | None:
    """The index of the token that gave the verdict: the JSON `pass` value's, else the last
    token reading as a verdict word; None when there is none."""
    text, last = "", None
    for i, token in enumerate(tokens):
        piece = token.get("token") or ""
        if piece.strip() and _PASS_KEY.search(text):
            return i if side(piece) is not None else None
        if side(piece) is not None:
            last = i
        text += piece
    return None if '"pass"' in text else last


def logprob_confidence(tokens: list[Token] | None) -> float | None:
    """The probability of the verdict the reply gave, over the pass and fail readings of its
    verdict token's alternatives (the token itself included); None: no verdict token, or no
    alternative on either side to weigh it by."""
    if not tokens:
        return None
    at = verdict_position(tokens)
    if at is None:
        return None
    chosen = side(tokens[at]["token"])
    sides = {True: 0.0, False: 0.0}
    for alt in _alternatives(tokens[at]):
        reads = side(alt["token"])
        if reads is not None:
            sides[reads] += math.exp(alt["logprob"])
    total = sides[True] + sides[False]
    return None if total <= 0 or chosen is None else sides[chosen] / total


def _alternatives(token: Token) -> Iterable[Token]:
    """The position's top alternatives, the token itself counted once."""
    seen = set()
    for alt in [token, *(token.get("top_logprobs") or [])]:
        if alt.get("logprob") is None or alt["token"] in seen:
            continue
        seen.add(alt["token"])
        yield alt


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

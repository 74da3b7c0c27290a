"""A verdict's confidence (confidence.py): from the verdict token's logprobs, and from the
share of repeats or jurors on the verdict's side."""

from __future__ import annotations

import math

import polars as pl
import pytest

from checkllm_batch.evaluate.judging.confidence import (
    logprob_confidence,
    verdict_position,
    vote_confidence,
)
from checkllm_batch.evaluate.judging.jury import VOTES


def tok(token, p, *alts):
    return {"token": token, "logprob": math.log(p),
            "top_logprobs": [{"token": t, "logprob": math.log(q)} for t, q in alts]}


JSON = [tok('{"', 1), tok("reason", 1), tok('":', 1), tok(' "', 1), tok("yes no", 1),
        tok('",', 1), tok(' "', 1), tok("pass", 1), tok('":', 1)]

LOGPROB_CASES = [
    # JSON: the `pass` value's token, over its true / false alternatives
    (JSON + [tok(" true", 0.6, (" true", 0.6), (" false", 0.2), (" tr", 0.1))], 0.75),
    (JSON + [tok(" false", 0.9, (" false", 0.9), (" true", 0.1))], 0.9),
    (JSON + [tok("true", 0.5, ("true", 0.5), ("True", 0.3), ("false", 0.2))], 0.8),
    # free text: the last verdict word (closedqa's Y / N at the end)
    ([tok("Yes", 1.0), tok(" it", 1), tok(" does", 1), tok(".\n", 1),
      tok("N", 0.7, ("N", 0.7), ("Y", 0.3))], 0.7),
    # no alternative on the other side: as sure as it gets
    ([tok("Y", 0.4, ("Y", 0.4), ("The", 0.5))], 1.0),
    # unicode, nothing reading as a verdict: no confidence
    ([tok("héllo", 0.5), tok(" 世界", 0.5)], None),
    ([], None),
    (None, None),
    # a `pass` key whose value is no verdict word: no confidence
    (JSON + [tok(" 0", 0.9)], None),
]


@pytest.mark.parametrize(("tokens", "want"), LOGPROB_CASES)
def test_logprob_confidence(tokens, want):
    got = logprob_confidence(tokens)
    assert got == (None if want is None else pytest.approx(want))


def test_verdict_position_is_the_pass_value_not_an_earlier_word():
    assert verdict_position(JSON + [tok(" true", 1.0)]) == len(JSON)


def _votes(*passes):
    return [{"juror": "j", "repeat": i, "pass": p, "score": None, "reason": ""}
            for i, p in enumerate(passes)]


VOTE_CASES = [
    (_votes(True, True, True, True, True), True, 1.0),
    (_votes(True, True, False, True, False), True, 0.6),
    (_votes(False, False, False, True, None), False, 0.75),  # an errored grading: no vote
    (_votes(True, False), False, 0.5),  # a tie fails, as sure as a coin
    (_votes(None, None), None, None),  # no verdict: no confidence
    ([], True, None),
    (None, True, None),
]


@pytest.mark.parametrize(("votes", "verdict", "want"), VOTE_CASES)
def test_vote_confidence(votes, verdict, want):
    frame = pl.DataFrame({"votes": [votes], "pass": [verdict]},
                         schema={"votes": VOTES, "pass": pl.Boolean})
    got = frame.select(vote_confidence(pl.col("votes"), pl.col("pass"))).item()
    assert got == (None if want is None else pytest.approx(want))

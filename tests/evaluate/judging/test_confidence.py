"""A verdict's confidence from the share of repeats or jurors on its side (confidence.py)."""

from __future__ import annotations

import polars as pl
import pytest

from checkllm_batch.evaluate.judging.confidence import vote_confidence
from checkllm_batch.evaluate.judging.jury import VOTES


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

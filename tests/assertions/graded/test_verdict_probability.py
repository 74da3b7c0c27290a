"""The verdict token's probability (replies.verdict_probability): how sure the judge was of
its verdict, from the reply's logprobs (a cascade stage's `logprobs` confidence)."""

from __future__ import annotations

import math

import pytest

from checkllm_batch.assertions.graded.replies import verdict_position, verdict_probability


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
def test_verdict_probability(tokens, want):
    got = verdict_probability(tokens)
    assert got == (None if want is None else pytest.approx(want))


def test_verdict_position_is_the_pass_value_not_an_earlier_word():
    assert verdict_position(JSON + [tok(" true", 1.0)]) == len(JSON)

"""levenshtein (promptfoo §5.5: UTF-16 code units, default threshold 5) and CheckLLM similarity."""

import pytest

CASES = [
    ({"type": "levenshtein", "value": "kitten"}, "sitting", ("pass", 1.0)),  # distance 3 <= 5
    ({"type": "levenshtein", "value": "kitten", "threshold": 2}, "sitting", ("fail", 0.0)),
    ({"type": "levenshtein", "value": "abc", "threshold": 0}, "abc", ("pass", 1.0)),
    ({"type": "levenshtein", "value": "", "threshold": 0}, "", ("pass", 1.0)),
    ({"type": "levenshtein", "value": "a", "threshold": 1}, "😀", ("fail", 0.0)),  # UTF-16: 2
    ({"type": "levenshtein", "value": "a", "threshold": 2}, "😀", ("pass", 1.0)),
    ({"type": "not-levenshtein", "value": "kitten"}, "sitting", ("fail", 0.0)),  # [N]: honoured
    ({"type": "similarity", "value": "abcd"}, "abcd", ("pass", 1.0)),
    ({"type": "similarity", "value": "abcd"}, "abce", ("fail", 0.75)),  # 1 - 1/4 < 0.8
    ({"type": "similarity", "value": "abcd", "threshold": 0.75}, "abce", ("pass", 0.75)),
    ({"type": "similarity", "reference": "hello world"}, "hello world", ("pass", 1.0)),
    ({"type": "not-similarity", "value": "abcd"}, "wxyz", ("pass", 1.0)),  # score 1 - 0
    ({"type": "not-similarity", "value": "abcd"}, "abce", ("pass", 0.25)),
    ({"type": "similarity", "value": ""}, "", ("pass", 1.0)),
    ({"type": "similarity", "value": "ab"}, "😀b", ("fail", 1 / 3)),  # UTF-16: 😀 is 2 units
]


@pytest.mark.parametrize("assertion,output,expected", CASES)
def test_distance_verdicts(check, assertion, output, expected):
    status, score = check(assertion, output)
    assert status == expected[0]
    assert score == pytest.approx(expected[1], abs=1e-6)


def test_levenshtein_reason_gives_distance(tmp_path):
    from conftest import run

    r = run(tmp_path, {"defaultTest": {"assert": [{"type": "levenshtein", "value": "kitten",
                                                   "threshold": 1}]}}, [{"output": "sitting"}])
    assert r.assertion_results["reason"][0] == (
        'Expected output to be within edit distance 1 of "kitten": distance 3')


def test_similarity_reference_per_row(tmp_path):
    from conftest import verdicts

    got = verdicts(tmp_path, {"type": "similarity", "value": "{{ref}}"}, ["abcd", "abcd"],
                   ref=["abcd", "wxyz"])
    assert got == [("pass", 1.0), ("fail", 0.0)]

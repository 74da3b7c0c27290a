"""levenshtein (promptfoo's assertions/levenshtein.ts: UTF-16 code units, default threshold 5) and CheckLLM similarity."""

import pytest
from fixtures.tables.distance import CASES


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


def _utf16_distance(a: str, b: str) -> int:
    """Textbook Levenshtein over UTF-16 code units: the oracle for the banded computation."""
    x = a.encode("utf-16-le")
    y = b.encode("utf-16-le")
    x = [x[i:i + 2] for i in range(0, len(x), 2)]
    y = [y[i:i + 2] for i in range(0, len(y), 2)]
    previous = list(range(len(y) + 1))
    for i, cx in enumerate(x, 1):
        current = [i]
        for j, cy in enumerate(y, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (cx != cy)))
        previous = current
    return previous[-1]


def _edited(text: str, edits: int) -> str:
    """`text` with its first `edits` characters replaced (each one edit)."""
    return "#" * edits + text[edits:]


LONG = ("the model answer energy light plant cell water carbon sugar leaf sun process green "
        "chemical reaction oxygen produce convert store root growth season ") * 3
# (output, value): pairs around the banded pass's limit (31 edits) and far beyond it, long
# enough for the band to matter; empty, unicode (BMP and astral) and far-apart pairs
PAIRS = [
    (LONG, LONG),
    (LONG, _edited(LONG, 5)),
    (LONG, _edited(LONG, 6)),
    (LONG, _edited(LONG, 30)),
    (LONG, _edited(LONG, 31)),
    (LONG, _edited(LONG, 32)),
    (LONG, _edited(LONG, 33)),
    (LONG, _edited(LONG, 90)),
    (LONG, LONG[:40] + LONG[72:]),  # 32 deletions: lengths differ by more than the band
    (LONG, LONG[::-1]),  # far apart
    (LONG, ""),
    ("", LONG),
    ("", ""),
    ("énergie lumière " * 20, "energie lumiere " * 20),  # 40 edits, non-ASCII BMP
    ("能量 光 植物 " * 30, "能量 光 植木 " * 30),  # 30 edits
    ("😀 light " * 20, "😁 light " * 20),  # astral: 20 characters, 20 UTF-16 units differ
    ("😀" * 40, "a" * 40),  # 80 UTF-16 units against 40
]


@pytest.mark.parametrize("threshold", [5, 31, 32])
def test_levenshtein_distance_is_exact_around_the_band(tmp_path, threshold):
    """Per-row values: each row's own pair; the reason quotes the exact distance, inside or
    outside the threshold and the band."""
    from conftest import run

    suite = {"defaultTest": {"assert": [{"type": "levenshtein", "value": "{{ref}}",
                                         "threshold": threshold}]}}
    r = run(tmp_path, suite, [{"output": o, "ref": v} for o, v in PAIRS])
    rows = r.assertion_results.sort("case_id")
    for (output, value), status, reason in zip(PAIRS, rows["status"], rows["reason"]):
        distance = _utf16_distance(output, value)
        assert status == ("pass" if distance <= threshold else "fail"), (distance, reason)
        assert reason.endswith(f": distance {distance}") or reason == f"distance {distance}"


@pytest.mark.parametrize("threshold", [0.8, 0.95])
def test_similarity_score_is_exact_around_the_band(tmp_path, threshold):
    """The score is 1 - distance / longer length (UTF-16 units) on every row, near or far."""
    from conftest import run

    suite = {"defaultTest": {"assert": [{"type": "similarity", "value": "{{ref}}",
                                         "threshold": threshold},
                                        {"type": "levenshtein", "value": "{{ref}}"}]}}
    r = run(tmp_path, suite, [{"output": o, "ref": v} for o, v in PAIRS])
    rows = r.assertion_results.filter(assertion_index=0).sort("case_id")
    for (output, value), status, score in zip(PAIRS, rows["status"], rows["score"]):
        longer = max(len(output.encode("utf-16-le")), len(value.encode("utf-16-le"))) // 2
        want = 1.0 if longer == 0 else 1 - _utf16_distance(output, value) / longer
        assert score == pytest.approx(want, abs=1e-12)
        assert status == ("pass" if want >= threshold else "fail")

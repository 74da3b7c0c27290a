"""perplexity and perplexity-score from a logprobs column (promptfoo's assertions/perplexity.ts)."""

import math

import pytest
from fixtures.engine import run_assertion

LP = [-0.1, -0.2, -0.3]
PPL = math.exp(0.2)
CASES = [
    ({"type": "perplexity"}, {"logprobs": LP}, "pass", 1.0),
    ({"type": "perplexity", "threshold": 1.3}, {"logprobs": LP}, "pass", 1.0),
    ({"type": "perplexity", "threshold": 1.2}, {"logprobs": LP}, "fail", 0.0),
    ({"type": "not-perplexity", "threshold": 1.2}, {"logprobs": LP}, "pass", 1.0),
    ({"type": "perplexity-score"}, {"logprobs": LP}, "pass", 1 / (1 + PPL)),
    ({"type": "perplexity-score", "threshold": 0.45}, {"logprobs": LP}, "pass", 1 / (1 + PPL)),
    ({"type": "perplexity-score", "threshold": 0.5}, {"logprobs": LP}, "fail", 1 / (1 + PPL)),
    ({"type": "not-perplexity-score", "threshold": 0.5}, {"logprobs": LP}, "pass",
     1 - 1 / (1 + PPL)),
    ({"type": "perplexity-score"}, {"logprobs": [0.0]}, "pass", 0.5),
    # no logprobs: an error with a reason, not a fail
    ({"type": "perplexity"}, {"logprobs": None}, "error", None),
    ({"type": "perplexity-score", "threshold": 0.1}, {"logprobs": []}, "error", None),
    ({"type": "perplexity"}, {"logprobs": "[-0.1, -0.2, -0.3]"}, "pass", 1.0),  # CSV text
]


@pytest.mark.parametrize(("assertion", "row", "status", "score"), CASES)
def test_perplexity(tmp_path, assertion, row, status, score):
    got = run_assertion(tmp_path, assertion, [{"output": "ünïcode", **row}])[0]
    assert got["status"] == status, got
    assert got["score"] == (pytest.approx(score, abs=1e-6) if score is not None else None)
    if status == "error":
        assert "logprobs" in got["reason"]


def test_missing_logprobs_column_is_an_error(tmp_path):
    got = run_assertion(tmp_path, {"type": "perplexity"}, [{"output": "x"}])[0]
    assert got["status"] == "error" and "no logprobs" in got["reason"]


@pytest.mark.parametrize("logprobs", [[[[]]], [[-0.1]], [{"a": 1}], 0.5, {"a": 1}, True])
def test_logprobs_of_another_shape_are_an_error_on_their_row(tmp_path, logprobs):
    """A JSONL logprobs column that is no list of numbers (found by the fuzz test: a column
    of [[[]]] crashed the cast of the whole batch) errors on its rows, with the reason."""
    import json

    import checkllm_batch as cb

    (tmp_path / "s.yaml").write_text("assert:\n  - type: perplexity\n    threshold: 10\n")
    rows = [{"output": "x", "logprobs": logprobs}, {"output": "y"}]
    (tmp_path / "o.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = cb.evaluate(tmp_path / "s.yaml", tmp_path / "o.jsonl").assertion_results
    assert got["status"].to_list() == ["error", "error"]
    assert "no logprobs recorded" in got["reason"][0]

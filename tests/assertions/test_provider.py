"""perplexity and perplexity-score from a logprobs column (promptfoo's assertions/perplexity.ts)."""


import pytest
from fixtures.engine import run_assertion
from fixtures.tables.provider import CASES


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

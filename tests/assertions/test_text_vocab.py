"""word-count, finish-reason, is-refusal: promptfoo's verdicts (its assertions/ modules)."""

import pytest
from fixtures.engine import run_assertion
from fixtures.tables.text_vocab import CASES


@pytest.mark.parametrize(("assertion", "row", "status", "score"), CASES)
def test_text_types(tmp_path, assertion, row, status, score):
    got = run_assertion(tmp_path, assertion, [row])[0]
    assert got["status"] == status, got
    assert got["score"] == (pytest.approx(score, abs=1e-6) if score is not None else None)


def test_json_output_is_an_assumed_refusal_scoring_zero(tmp_path):
    # promptfoo 0.123.1: a non-text output passes is-refusal and fails not-is-refusal, score 0
    for kind, status in (("is-refusal", "pass"), ("not-is-refusal", "fail")):
        got = run_assertion(tmp_path, {"type": kind}, [{"output": {"tool": "x"}}])[0]
        assert (got["status"], got["score"]) == (status, 0.0)


@pytest.mark.parametrize("value", [{"min": 5, "max": 2}, "many", {"least": 1}, [1]])
def test_word_count_bad_values_fail_at_parse_time(tmp_path, value):
    from checkllm_batch.errors import ConfigError

    with pytest.raises(ConfigError):
        run_assertion(tmp_path, {"type": "word-count", "value": value}, [{"output": "a"}])

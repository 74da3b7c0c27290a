"""word-count, finish-reason, is-refusal: promptfoo's verdicts (its assertions/ modules)."""

import pytest
from fixtures.engine import run_assertion

# (assertion, row, status, score)
CASES = [
    ({"type": "word-count", "value": 3}, {"output": "a b  c"}, "pass", 1.0),
    ({"type": "word-count", "value": "3"}, {"output": " a\tb\nc "}, "pass", 1.0),
    ({"type": "word-count", "value": 3}, {"output": "a b"}, "fail", 0.0),
    ({"type": "word-count", "value": 0}, {"output": ""}, "pass", 1.0),
    ({"type": "word-count", "value": 2}, {"output": "héllo wörld"}, "pass", 1.0),
    ({"type": "word-count", "value": 2}, {"output": "日本語\u3000テキスト"}, "pass", 1.0),
    ({"type": "word-count", "value": {"min": 1, "max": 2}}, {"output": "a b c"}, "fail", 0.0),
    ({"type": "word-count", "value": {"min": 2}}, {"output": "a b c"}, "pass", 1.0),
    ({"type": "word-count", "value": {"max": 2}}, {"output": "a b c"}, "fail", 0.0),
    ({"type": "not-word-count", "value": 3}, {"output": "a b c"}, "fail", 0.0),
    ({"type": "word-count", "value": 1}, {"output": None}, "fail", 0.0),
    ({"type": "finish-reason", "value": "stop"}, {"output": "x", "finish_reason": "STOP"}, "pass", 1.0),
    ({"type": "finish-reason", "value": "stop"}, {"output": "x", "finish_reason": "length"}, "fail", 0.0),
    ({"type": "not-finish-reason", "value": "stop"}, {"output": "x", "finish_reason": "length"}, "pass", 1.0),
    # a missing finish reason fails, as in promptfoo (tests/promptfoo_kit/per-row.jsonl);
    # its negation passes
    ({"type": "finish-reason", "value": "stop"}, {"output": "x", "finish_reason": None}, "fail", 0.0),
    ({"type": "finish-reason", "value": "stop"}, {"output": "x"}, "fail", 0.0),
    ({"type": "not-finish-reason", "value": "stop"}, {"output": "x"}, "pass", 1.0),
    ({"type": "is-refusal"}, {"output": "I'm sorry, I can't do that."}, "pass", 1.0),
    ({"type": "is-refusal"}, {"output": "I\u2019m sorry"}, "pass", 1.0),
    ({"type": "is-refusal"}, {"output": "  Sorry, no."}, "pass", 1.0),
    ({"type": "is-refusal"}, {"output": "Well, as an AI I cannot help with that"}, "pass", 1.0),
    ({"type": "is-refusal"}, {"output": "Here is your poem about Paris."}, "fail", 0.0),
    ({"type": "is-refusal"}, {"output": "I cannot helpfully summarise"}, "pass", 1.0),  # prefix
    ({"type": "is-refusal"}, {"output": "Honestly I cannot helpfully say"}, "fail", 0.0),  # \b
    ({"type": "is-refusal"}, {"output": "I'm sorry to hear that"}, "pass", 1.0),  # known FP
    ({"type": "is-refusal"}, {"output": "   "}, "pass", 0.0),  # empty: a refusal, score 0
    ({"type": "not-is-refusal"}, {"output": ""}, "fail", 0.0),
    ({"type": "not-is-refusal"}, {"output": "Sure, here it is."}, "pass", 1.0),
    ({"type": "not-is-refusal"}, {"output": "I apologize, but no."}, "fail", 0.0),
]


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

"""The `judge: cascade:` block (suites/cascade.py): stages over the block's settings, each
with a usable confidence, every problem named by file and field at parse time."""

from __future__ import annotations

import pytest
from conftest import write_suite

import checkllm_batch as cb
from checkllm_batch.errors import ConfigError
from checkllm_batch.suites.cascade import fewest, stages
from checkllm_batch.suites.judge import JudgeConfig

ASSERT = "tests:\n  - assert:\n      - type: llm-rubric\n        value: polite\n"


def suite(tmp_path, judge: str):
    return cb.load(write_suite(tmp_path, ASSERT + "judge:\n" + judge))


def error(tmp_path, judge: str) -> str:
    with pytest.raises(ConfigError) as e:
        suite(tmp_path, judge)
    return str(e.value)


GOOD = """  temperature: 0.0
  base_url: http://127.0.0.1:9/v1
  cascade:
    - {model: small, confidence: repeats, repeat: 5, temperature: 0.8}
    - {model: large}
  agreement: 0.85
  risk: 0.05
  calibration: 200
"""


def test_a_cascade_reads_into_stages_over_the_blocks_settings(tmp_path):
    config = JudgeConfig.from_sources(suite(tmp_path, GOOD).judge)
    first, last = stages(config)
    assert (first.config.model, first.config.repeat, first.config.temperature) == \
        ("small", 5, 0.8)
    assert first.confidence == "repeats" and first.config.base_url == "http://127.0.0.1:9/v1"
    assert (last.config.model, last.config.repeat, last.config.temperature) == \
        ("large", 1, 0.0)
    assert last.confidence is None  # the reference keeps what it is given
    assert (config.agreement, config.risk, config.calibration, config.abstain) == \
        (0.85, 0.05, 200, "person")
    assert config.jurors == ("small", "large") and config.enabled
    assert config.record()["cascade"][0]["model"] == "small"


def test_a_jurys_stage_is_sure_by_its_vote_share(tmp_path):
    config = JudgeConfig.from_sources(suite(tmp_path, """  cascade:
    - {models: [a, b, c]}
    - {model: é-large}
""").judge)
    assert [s.confidence for s in stages(config)] == ["jury", None]


def test_without_a_cascade_the_record_is_as_before():
    assert "cascade" not in JudgeConfig(model="m").record()
    assert "agreement" not in JudgeConfig(model="m").record()


ERRORS = [
    # (judge block, fragments of the message)
    ("  cascade:\n    - {model: small}\n    - {model: large}\n",
     ["suite.yaml:", "judge cascade stage 1", "no confidence", "confidence: logprobs"]),
    ("  cascade:\n    - {model: small, confidence: repeats, repeat: 5}\n    - {model: large}\n",
     ["stage 1", "temperature above 0", "repeat 5, temperature 0.0"]),
    ("  cascade:\n    - {model: small, confidence: repeats}\n    - {model: large}\n",
     ["stage 1", "repeat: 2 or more"]),
    ("  cascade:\n    - {model: small, confidence: logprob}\n    - {model: large}\n",
     ["confidence must be one of logprobs, repeats, jury", 'did you mean "logprobs"']),
    ("  cascade:\n    - {model: small, confidence: jury}\n    - {model: large}\n",
     ["confidence: jury needs a jury"]),
    ("  cascade:\n    - {confidence: logprobs}\n    - {model: large}\n",
     ["stage 1", "names its judge"]),
    ("  cascade:\n    - {model: s, confidence: logprobs, modle: x}\n    - {model: large}\n",
     ["stage 1", "unknown stage setting 'modle'", 'did you mean "model"']),
    ("  cascade:\n    - {model: s, confidence: logprobs, risk: 0.2}\n    - {model: l}\n",
     ["risk is a setting of the whole cascade"]),
    ("  cascade:\n    - {model: s, confidence: logprobs, mode: batch}\n    - {model: l}\n",
     ["needs mode: online"]),
    ("  cascade:\n    - {model: small, confidence: logprobs}\n",
     ["needs two stages"]),
    ("  model: gpt\n  cascade:\n    - {model: s, confidence: logprobs}\n    - {model: l}\n",
     ["names its models in its stages"]),
    ("  cascade: []\n", ["cascade must list its stages"]),
    ("  cascade:\n    - small\n    - {model: l}\n", ["a stage is a mapping"]),
    ("  cascade:\n    - {model: s, confidence: logprobs}\n    - {model: l}\n"
     "  calibration: 10\n", ["calibration: 10 cases cannot certify", "22 are needed"]),
    ("  cascade:\n    - {model: s, confidence: logprobs}\n    - {model: l}\n"
     "  agreement: 1.5\n", ["agreement"]),
    ("  cascade:\n    - {model: s, confidence: logprobs}\n    - {model: l}\n"
     "  reference: 'a b'\n", ["reference must be `last` or a label name"]),
    ("  cascade:\n    - {model: s, confidence: logprobs}\n    - {model: l}\n"
     "  abstain: maybe\n", ["abstain"]),
    # a label as reference: the last stage needs a confidence too
    ("  cascade:\n    - {model: s, confidence: logprobs}\n    - {model: l}\n"
     "  reference: human\n", ["judge cascade stage 2", "no confidence"]),
]


@pytest.mark.parametrize(("judge", "fragments"), ERRORS)
def test_a_cascade_without_what_it_needs_is_refused_at_parse_time(tmp_path, judge, fragments):
    message = error(tmp_path, judge)
    for fragment in fragments:
        assert fragment in message


def test_a_label_reference_may_have_one_stage(tmp_path):
    config = JudgeConfig.from_sources(suite(tmp_path, """  cascade:
    - {model: small, confidence: logprobs}
  reference: human
  abstain: last
""").judge)
    [only] = stages(config)
    assert only.confidence == "logprobs" and config.abstain == "last"


def test_a_cascade_built_in_code_is_checked():
    with pytest.raises(ConfigError, match="no confidence"):
        JudgeConfig(cascade=({"model": "a"}, {"model": "b"})).check()


def test_a_model_on_the_command_line_replaces_the_suites_cascade():
    config = JudgeConfig.from_sources(
        {"cascade": [{"model": "s", "confidence": "logprobs"}, {"model": "l"}]}, model="m")
    assert config.cascade is None and config.jurors == ("m",)


@pytest.mark.parametrize(("a", "risk"), [(0.9, 0.1), (0.8, 0.05), (0.95, 0.2), (0.5, 0.5)])
def test_fewest_rows_any_test_certifies(a, risk):
    n = fewest(a, risk)
    assert a ** n <= risk < a ** (n - 1)


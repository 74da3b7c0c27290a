"""CheckLLM's promptfoo-style suite (seed doc example) parses and runs as written."""

from __future__ import annotations

import polars as pl
from fixtures.suites import write_suite

import checkllm_batch as cb

SEED_EXAMPLE = {"tests": [{
    "description": "photosynthesis",
    "prompt": "Summarize: {{text}}",
    "vars": {"text": "Photosynthesis converts sunlight into chemical energy."},
    "assert": [
        {"type": "contains", "value": "energy"},
        {"type": "not-contains", "value": "TODO"},
        {"type": "regex", "value": "\\b[Pp]hoto"},
        {"type": "equals", "value": "Photosynthesis converts sunlight into chemical energy."},
        {"type": "model", "prompt": "Is this response professional? Answer with a score 0-1.",
         "threshold": 0.7},
        {"type": "llm-rubric", "rubric": "Response must be concise.", "threshold": 0.75},
        {"type": "model-graded-relevance", "query": "{{text}}", "threshold": 0.8},
        {"type": "model-graded-faithfulness", "context": "{{text}}", "threshold": 0.85},
        {"type": "similarity", "reference": "Photosynthesis turns sunlight into energy.",
         "threshold": 0.8},
        {"type": "cost", "value": 0.02},
        {"type": "latency", "value": 1500},
    ]}]}


def test_seed_example(tmp_path):
    suite = cb.load(write_suite(tmp_path, SEED_EXAMPLE))
    assert [a.type for a in suite.tests[0].asserts] == [
        "contains", "contains", "regex", "equals", "model", "llm-rubric", "answer-relevance",
        "context-faithfulness", "similarity", "cost", "latency"]
    rows = pl.DataFrame({"output": ["Photosynthesis converts sunlight into chemical energy."],
                         "cost": [0.01], "latency_ms": [2000.0]})
    frame = cb.evaluate(suite, rows).assertion_results
    assert frame["status"].to_list() == [
        "pass", "pass", "pass", "pass", "error", "error", "error", "error",  # no judge: errors
        "fail", "error", "fail"]  # CheckLLM `cost: value` is the judge's cost: no judge, error
    assert abs(frame["score"][8] - 0.7222222) < 1e-6  # normalised Levenshtein: 1 - 15/54

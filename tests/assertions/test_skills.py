"""skill-used reads the skills an agent used from the case's `metadata` column, given as a
JSON object (JSONL, Parquet struct), as JSON text (CSV), or from promptfoo's results file
(`response.metadata`). promptfoo 0.123.1's verdicts on promptfoo's own unit-test cases are in
tests/promptfoo_kit/skill-used.jsonl; the verdicts below on entries of mixed types were
recorded the same way (the offline kit, its provider returning the row's metadata), kept
here because a table row is built by Polars, which cannot hold such a list."""

from __future__ import annotations

import json

import orjson
import pytest
import yaml

import checkllm_batch as cb

MIXED = {"skillCalls": [{"name": "A-Skill"}, {"name": "a-skill"}, {"name": 5}, "text", None,
                        {"name": "b", "is_error": False}, {"name": "c", "is_error": "yes"}]}
# (value, promptfoo's verdict) on MIXED: names compare exactly, patterns ignore case, entries
# without a text name do not count, and only `is_error: true` drops an entry
ON_MIXED = [
    ("A-Skill", True),
    ("a-skill", True),
    ({"pattern": "a-skill", "min": 2}, True),
    ("b", True),
    ("c", True),
    ({"pattern": "*", "min": 4, "max": 4}, True),
]


def _run(tmp_path, asserts: list, lines: list[dict], name: str = "out.jsonl"):
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"assert": asserts}))
    data = tmp_path / name
    data.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return cb.evaluate(suite, data).assertion_results.sort("case_id", "assertion_index")


def test_entries_of_mixed_types_from_jsonl(tmp_path):
    asserts = [{"type": "skill-used", "value": v} for v, _ in ON_MIXED]
    got = _run(tmp_path, asserts, [{"output": "Done", "metadata": MIXED}])
    assert got["status"].to_list() == ["pass" if ok else "fail" for _, ok in ON_MIXED]


def test_metadata_as_json_text_and_a_broken_row(tmp_path):
    """A CSV carries metadata as JSON text; a row whose text is no JSON errors alone."""
    lines = [{"output": "a", "metadata": json.dumps({"skillCalls": [{"name": "pdf"}]})},
             {"output": "b", "metadata": "{not json"},
             {"output": "c", "metadata": None}]
    got = _run(tmp_path, [{"type": "skill-used", "value": "pdf"}], lines)
    assert got["status"].to_list() == ["pass", "error", "fail"]
    assert "metadata is not valid JSON" in got["reason"][1]


def test_a_per_row_value(tmp_path):
    lines = [{"output": "a", "skill": "pdf", "metadata": {"skillCalls": [{"name": "pdf"}]}},
             {"output": "b", "skill": "docx", "metadata": {"skillCalls": [{"name": "pdf"}]}},
             {"output": "c", "skill": "", "metadata": {"skillCalls": [{"name": "pdf"}]}}]
    got = _run(tmp_path, [{"type": "skill-used", "value": "{{skill}}"}], lines)
    assert got["status"].to_list() == ["pass", "fail", "error"]
    assert "string, string array, or object value" in got["reason"][2]


@pytest.mark.parametrize("value, error", [
    ({"pattern": "t*", "min": -1}, "min must be a finite non-negative integer"),
    ({"min": 1}, "must include a name or pattern property"),
    ([], "must have a string, string array, or object value"),
])
def test_bad_values_are_refused_at_parse_time(tmp_path, value, error):
    with pytest.raises(cb.ConfigError, match=error):
        _run(tmp_path, [{"type": "skill-used", "value": value}], [{"output": "x"}])


def test_not_skill_used_refuses_count_bounds(tmp_path):
    with pytest.raises(cb.ConfigError, match="only support name/pattern with no count bounds"):
        _run(tmp_path, [{"type": "not-skill-used", "value": {"pattern": "t*", "max": 1}}],
             [{"output": "x"}])


def test_promptfoo_results_carry_metadata_and_finish_reason(tmp_path):
    result = {"testCase": {"description": "t", "vars": {}}, "provider": {"id": "p"},
              "prompt": {"raw": "q", "label": "q"}, "vars": {},
              "response": {"output": "Done", "finishReason": "stop",
                           "metadata": {"skillCalls": [{"name": "pdf"}]}}}
    data = tmp_path / "results.json"
    data.write_bytes(orjson.dumps({"results": {"results": [result]}}))
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"assert": [
        {"type": "skill-used", "value": "pdf"}, {"type": "finish-reason", "value": "stop"}]}))
    got = cb.evaluate(suite, data).assertion_results.sort("assertion_index")
    assert got["status"].to_list() == ["pass", "pass"]

"""Per-row values end to end: the cases that used to crash, error or run one query per value.

Verdicts marked [pf] were checked with promptfoo 0.123.1 (the offline kit): the suite in
tests/data/promptfoo_per_row.yaml, its answers beside each case.
"""

from __future__ import annotations

import json

import polars as pl
import pytest
from conftest import run

import checkllm_batch as cb

CASES = [  # (assertion, row vars and output, expected statuses)
    ({"type": "equals", "value": "{{expected}}"},
     [{"output": "Paris", "expected": "Paris"}, {"output": "Paris", "expected": "Rome"}],
     ["pass", "fail"]),  # [pf]
    ({"type": "equals", "value": "{{expected}}"},  # promptfoo cuts one trailing newline
     [{"output": "Paris", "expected": "Paris\n"}, {"output": "Paris", "expected": "Paris\n\n"}],
     ["pass", "fail"]),  # [pf]
    ({"type": "equals", "value": "{{ expected | upper }}"},
     [{"output": "PARIS", "expected": "paris"}, {"output": "Paris", "expected": "paris"}],
     ["pass", "fail"]),  # [pf]
    ({"type": "equals", "value": "{{ expected | trim }}"},
     [{"output": "Paris", "expected": "  Paris "}], ["pass"]),  # [pf]
    ({"type": "equals", "value": "{{ missing | default('none') }}"},
     [{"output": "none"}], ["pass"]),  # [pf]
    ({"type": "equals", "value": "a{{ missing }}b"}, [{"output": "ab"}], ["pass"]),  # [pf]
    ({"type": "equals", "value": "{% if n > 2 %}big{% else %}small{% endif %}"},
     [{"output": "big", "n": 3}, {"output": "big", "n": 1}], ["pass", "fail"]),  # [pf]
    ({"type": "equals", "value": "{% raw %}{{x}}{% endraw %}"},
     [{"output": "{{x}}"}], ["pass"]),  # [pf]
    ({"type": "equals", "value": "{{ answer }}"},  # a var holding {{other}}: resolved
     [{"output": "It is Paris", "answer": "It is {{city}}", "city": "Paris"}], ["pass"]),  # [pf]
    ({"type": "contains", "value": "{{ item | dump }}"},
     [{"output": 'got {"a":1}', "item": '{"a": 1}'}], ["fail"]),  # a string dumps quoted
    ({"type": "equals", "value": {"a": 1, "b": {"c": [1, 2]}}},
     [{"output": '{"b": {"c": [1, 2]}, "a": 1}'}, {"output": '{"a": 1}'}], ["pass", "fail"]),
    ({"type": "equals", "value": {"city": "{{city}}", "n": 1}},  # a mapping is not rendered
     [{"output": '{"city": "Oslo", "n": 1}', "city": "Oslo"},
      {"output": '{"city": "{{city}}", "n": 1}', "city": "Rome"}], ["fail", "pass"]),  # [pf]
    ({"type": "contains-any", "value": [-3.625, "-29/8"]},  # from a promptfoo example
     [{"output": "x = -29/8"}, {"output": "x = -3.625"}, {"output": "x = 3"}],
     ["pass", "pass", "fail"]),  # [pf]
    ({"type": "contains-any", "value": "{{keywords}}"},
     [{"output": "a dog", "keywords": "cat, dog"}, {"output": "a dog", "keywords": "cat"},
      {"output": "x, y", "keywords": '"x, y", z'}], ["pass", "fail", "pass"]),
    ({"type": "contains-all", "value": ["{{a}}", "{{b}}"]},
     [{"output": "cat and dog", "a": "cat", "b": "dog"},
      {"output": "cat", "a": "cat", "b": "dog"}], ["pass", "fail"]),
    ({"type": "regex", "value": "{{pattern}}"},
     [{"output": "abc123", "pattern": "\\d+$"}, {"output": "abc", "pattern": "^\\d"},
      {"output": "foobar", "pattern": "foo(?=bar)"}, {"output": "x", "pattern": "("}],
     ["pass", "fail", "pass", "error"]),
    ({"type": "max-length", "value": "{{limit}}"},
     [{"output": "abc", "limit": 5}, {"output": "abcdef", "limit": 5},
      {"output": "abc", "limit": "x"}], ["pass", "fail", "error"]),
    ({"type": "sentence-count", "value": "{{n}}"},
     [{"output": "One. Two.", "n": 2}, {"output": "One. Two. Three.", "n": 2}],
     ["pass", "fail"]),
    ({"type": "word-count", "value": "{{n}}"},
     [{"output": "a b c", "n": 3}, {"output": "a b", "n": 3}], ["pass", "fail"]),
    ({"type": "levenshtein", "value": "{{ref}}", "threshold": 1},
     [{"output": "kitten", "ref": "kitten"}, {"output": "kitten", "ref": "sitting"}],
     ["pass", "fail"]),  # [pf]
    ({"type": "tool-call-count", "tool": "{{t}}", "max": 1},
     [{"output": "", "t": "get_weather", "tool_calls": json.dumps(
         [{"function": {"name": "get_weather", "arguments": "{}"}}] * 2)},
      {"output": "", "t": "lookup", "tool_calls": json.dumps(
          [{"function": {"name": "get_weather", "arguments": "{}"}}] * 2)}], ["fail", "pass"]),
]


@pytest.mark.parametrize("assertion,rows,statuses", CASES)
def test_per_row_values(tmp_path, assertion, rows, statuses):
    result = run(tmp_path, {"defaultTest": {"assert": [assertion]}}, rows)
    got = result.assertion_results.sort("case_id")
    assert got["status"].to_list() == statuses, got["reason"].to_list()


def test_a_row_pattern_rust_cannot_compile_runs_on_the_backtracking_engine(tmp_path):
    # Rust refuses the translation of (?:.{100}){1000} (its size limit); JavaScript runs it.
    # The per-row path leaves compiling to the match: the rows Rust could not compile are
    # matched again by the backtracking engine, as a literal of the pattern is
    rows = [{"output": "a" * 100_000, "p": "(?:.{100}){1000}"},
            {"output": "a" * 99_999, "p": "(?:.{100}){1000}"},
            {"output": "a1", "p": "\\d"}, {"output": "ab", "p": "[unclosed"}]
    got = run(tmp_path, {"defaultTest": {"assert": [{"type": "regex", "value": "{{p}}"}]}},
              rows).assertion_results.sort("case_id")
    assert got["status"].to_list() == ["pass", "fail", "pass", "error"], got["reason"].to_list()
    assert got["reason"][3].startswith("value '[unclosed': invalid regex")


def test_a_value_that_does_not_compile_errors_its_rows_only(tmp_path):
    rows = [{"output": "a1", "p": "\\d"}, {"output": "a1", "p": "[unclosed"}]
    got = run(tmp_path, {"defaultTest": {"assert": [{"type": "regex", "value": "{{p}}"}]}},
              rows).assertion_results.sort("case_id")
    assert got["status"].to_list() == ["pass", "error"]
    assert "[unclosed" in got["reason"][1] and "invalid regex" in got["reason"][1]


def test_tests_vars_and_rows_vars_mix(tmp_path):
    suite = {"tests": [{"description": "a", "vars": {"expected": "Paris"},
                        "assert": [{"type": "equals", "value": "{{expected}}"}]},
                       {"description": "b", "vars": {"expected": "Rome\n"},
                        "assert": [{"type": "equals", "value": "{{ expected | lower }}"}]}]}
    rows = [{"test_id": "a", "output": "Paris"}, {"test_id": "b", "output": "rome"}]
    assert run(tmp_path, suite, rows).assertion_results["status"].to_list() == ["pass", "pass"]


def test_templated_provider_tools_are_rendered_per_case(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "providers:\n"
        "  - id: openai:gpt-4o\n"
        "    config:\n"
        "      tools:\n"
        "        - type: function\n"
        "          function:\n"
        "            name: get_weather\n"
        "            parameters:\n"
        "              type: object\n"
        "              properties: {unit: {type: string, enum: ['{{unit}}']}}\n"
        "assert:\n"
        "  - type: is-valid-openai-tools-call\n", encoding="utf-8")
    call = json.dumps([{"type": "function", "function": {
        "name": "get_weather", "arguments": json.dumps({"unit": "celsius"})}}])
    outputs = pl.DataFrame({"provider": ["openai:gpt-4o"] * 2, "output": [call] * 2,
                            "unit": ["celsius", "kelvin"]})
    got = cb.evaluate(suite, outputs).assertion_results.sort("case_id")
    assert got["status"].to_list() == ["pass", "fail"]

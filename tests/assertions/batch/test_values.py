"""Per-row values end to end: the cases that used to crash, error or run one query per value.

Verdicts marked [pf] were checked with promptfoo 0.123.1 (the offline kit): the suite in
tests/data/promptfoo_per_row.yaml, its answers beside each case.
"""

from __future__ import annotations

import json

import duckdb
import polars as pl
import pytest
from click.testing import CliRunner
from conftest import run

import checkllm_batch as cb
from checkllm_batch.cli import main

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


# A JSONL dataset's columns are decided from the whole file: a row's verdict is the same
# whatever rows share its batch. [pf] verdicts are promptfoo 0.123.1's with the same vars as
# test vars (QA's repros: semantics/repro2 and repro3 pf_out.json, t_rows and t_rows2).
JSONL_CASES = [  # (assertion, JSONL rows, expected statuses)
    ({"type": "equals", "value": "{{n}}"},  # a column of strings and numbers
     [{"output": "x", "n": "x"}, {"output": "1", "n": 1}], ["pass", "pass"]),  # [pf] repro2
    ({"type": "equals", "value": "{{n}}"},
     [{"output": "1", "n": 1}, {"output": "x", "n": "x"}, {"output": "true", "n": True}],
     ["pass", "pass", "pass"]),  # [pf] t_rows g1
    ({"type": "word-count", "value": "{{n}}"},
     [{"output": "a b", "n": 2}, {"output": "a b c", "n": 3.0}, {"output": "a", "n": "1"}],
     ["pass", "pass", "pass"]),  # [pf] t_rows g18
    ({"type": "equals", "value": "{{o.k}}"},
     [{"output": "1", "o": {"k": 1}}, {"output": "x", "o": {"k": "x"}}, {"output": "", "o": {}}],
     ["pass", "pass", "pass"]),  # [pf] t_rows g4
    ({"type": "equals", "value": "{{o | dump}}"},  # objects of other keys gain none
     [{"output": '{"j":2}', "o": {"j": 2}}, {"output": '{"k":1}', "o": {"k": 1}, "n": "v"}],
     ["pass", "pass"]),  # [pf] repro3
    ({"type": "equals", "value": "{{o | dump}}"},
     [{"output": '{"k":1}', "o": {"k": 1}}, {"output": '{"k":1.5,"j":null}',
                                            "o": {"k": 1.5, "j": None}},
      {"output": '{"j":2}', "o": {"j": 2}}], ["pass", "pass", "pass"]),  # [pf] t_rows g5
    ({"type": "python", "value": "'k' not in context['vars']['o']"},
     [{"output": '{"j":2}', "o": {"j": 2}}, {"output": '{"k":1}', "o": {"k": 1}, "n": "v"}],
     ["pass", "fail"]),  # [pf] repro3
    ({"type": "equals", "value": "{{l | dump}}"},  # a list of mixed items
     [{"output": '[1,"a"]', "l": [1, "a"]}, {"output": '["b"]', "l": ["b"]}],
     ["pass", "pass"]),  # [pf] t_rows2 g14
    ({"type": "equals", "value": "{{n | default('d')}}"},  # a key missing: undefined
     [{"output": "d"}, {"output": "v", "n": "v"}], ["pass", "pass"]),  # [pf] t_rows2 g16
    ({"type": "equals", "value": "{% if n is defined %}D{% else %}U{% endif %}"},
     [{"output": "U"}, {"output": "D", "n": "v"}], ["pass", "pass"]),  # [pf] t_rows2 g17
    ({"type": "python", "value": "'n' not in context['vars']"},
     [{"output": "x"}, {"output": "y", "n": "v"}], ["pass", "fail"]),  # [pf] t_rows2 g18
    ({"type": "equals", "value": "{{n}}"},  # JSON null and a missing key print nothing
     [{"output": "", "n": None}, {"output": ""}, {"output": "é", "n": "é\n"}],
     ["pass", "pass", "pass"]),
    ({"type": "equals", "value": "{{n}}"},  # beyond int64: a double, as in JavaScript
     [{"output": "9223372036854776000", "n": 2**63, "l": [2**63]}, {"output": "1", "n": 1}],
     ["pass", "pass"]),
    ({"type": "equals", "value": "<{{n}}>"},  # as JavaScript's String() prints each value
     [{"output": "<3>", "n": 3.0}, {"output": "<12345678901234568>", "n": 12345678901234567},
      {"output": "<[object Object]>", "n": {"a": [1]}}, {"output": "<false>", "n": False},
      {"output": "<1,2,[object Object],,x>", "n": [1, [2, {"a": 1}], None, "x"]},
      {"output": "<>", "n": []}, {"output": "<0.0000015>", "n": 1.5e-6}],
     ["pass"] * 7),
]


@pytest.mark.parametrize("assertion,rows,statuses", JSONL_CASES)
def test_jsonl_values_do_not_depend_on_the_batch(tmp_path, assertion, rows, statuses):
    suite = tmp_path / "suite.yaml"
    suite.write_text(json.dumps({"defaultTest": {"assert": [assertion]}}))
    path = tmp_path / "out.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = {}
    for batch_rows in (1, 1000):
        frame = cb.evaluate(suite, path, batch_rows=batch_rows).assertion_results.sort("case_id")
        got[batch_rows] = frame.select("status", "score", "reason").rows()
    assert got[1] == got[1000]
    assert [s for s, _, _ in got[1]] == statuses, got[1]


def test_json_vars_hold_in_a_json_array_and_through_filters(tmp_path):
    """The JSON array's rows are typed from all of them; --filter-* keeps the marking."""
    rows = [{"output": "x", "n": "x"}, {"output": "1", "n": 1}, {"output": "u"}]  # [pf] repro2
    suite = tmp_path / "suite.yaml"
    suite.write_text(json.dumps({"defaultTest": {"assert": [
        {"type": "equals", "value": "{{ n | default('u') }}"}]}}))
    array, lines = tmp_path / "out.json", tmp_path / "out.jsonl"
    array.write_text(json.dumps(rows))
    lines.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = cb.evaluate(suite, array, batch_rows=1).assertion_results.sort("case_id")
    assert got["status"].to_list() == ["pass"] * 3, got["reason"].to_list()
    db = tmp_path / "r.duckdb"
    result = CliRunner().invoke(main, ["eval", str(suite), "--outputs", str(lines), "--db",
                                       str(db), "--filter-first-n", "3"])
    assert result.exit_code == 0, result.output
    with duckdb.connect(str(db)) as con:
        assert con.sql("SELECT status FROM assertion_results ORDER BY case_id").fetchall() \
            == [("pass",)] * 3

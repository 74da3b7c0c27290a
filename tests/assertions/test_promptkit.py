"""PromptKit checks: the `type` + `params` translation, and the types they land on."""

from __future__ import annotations

import json

import pytest
from fixtures.suites import parse_problems, results
from fixtures.tables.promptkit import COLUMN_CASES, WEATHER, call

from checkllm_batch.assertions.reading.promptkit import is_promptkit, translate

# (PromptKit assertion, the promptfoo-shaped assertion it becomes)
TRANSLATIONS = [
    ({"type": "contains", "params": {"patterns": ["a", "b"]}},
     {"type": "icontains-all", "value": ["a", "b"]}),
    ({"type": "content_includes", "params": {"patterns": ["a"]}},
     {"type": "icontains-all", "value": ["a"]}),
    ({"type": "regex", "params": {"pattern": "^a"}}, {"type": "regex", "value": "^a"}),
    ({"type": "content_matches", "params": {"pattern": "x+"}}, {"type": "regex", "value": "x+"}),
    ({"type": "content_excludes", "params": {"patterns": ["bad"]}},
     {"type": "content-excludes", "value": ["bad"]}),
    ({"type": "banned_words", "params": {"words": ["bad"]}},
     {"type": "content-excludes", "value": ["bad"], "match_mode": "word_boundary"}),
    ({"type": "banned_words", "params": {"patterns": ["bad"], "match_mode": "substring"}},
     {"type": "content-excludes", "value": ["bad"], "match_mode": "substring"}),
    ({"type": "content_not_includes", "params": {"patterns": ["x"]}},
     {"type": "content-excludes", "value": ["x"]}),
    ({"type": "contains_any", "params": {"patterns": ["a", "b"]}},
     {"type": "icontains-any", "value": ["a", "b"]}),
    ({"type": "min_length", "params": {"min_characters": 3}}, {"type": "min-length", "value": 3}),
    ({"type": "min_length", "params": {"min_chars": 3}}, {"type": "min-length", "value": 3}),
    ({"type": "max_length", "params": {"max": 9}}, {"type": "max-length", "value": 9}),
    ({"type": "length", "params": {"max_chars": 9}}, {"type": "max-length", "value": 9}),
    ({"type": "sentence_count", "params": {"max_sentences": 2}},
     {"type": "sentence-count", "max": 2}),
    ({"type": "max_sentences", "params": {"max": 2, "min": 1}},
     {"type": "sentence-count", "max": 2, "min": 1}),
    ({"type": "field_presence", "params": {"required_fields": ["id"]}},
     {"type": "field-presence", "value": ["id"]}),
    ({"type": "required_fields", "params": {"fields": ["id"]}},
     {"type": "field-presence", "value": ["id"]}),
    ({"type": "json_valid"}, {"type": "is-json"}),
    ({"type": "valid_json", "params": {}}, {"type": "is-json"}),
    ({"type": "is_valid_json"}, {"type": "is-json"}),
    ({"type": "json_schema", "params": {"schema": {"type": "object"}}},
     {"type": "is-json", "value": {"type": "object"}}),
    ({"type": "json_path", "params": {"expression": "a.b", "expected": 1}},
     {"type": "json-path", "value": "a.b", "expected": 1}),
    ({"type": "tools_called", "params": {"tool_names": ["f"]}},
     {"type": "tools-called", "value": ["f"]}),
    ({"type": "tool_called", "params": {"tool_names": ["f"]}},
     {"type": "tools-called", "value": ["f"]}),
    ({"type": "tools_not_called", "params": {"tool_names": ["f"]}},
     {"type": "tools-not-called", "value": ["f"]}),
    ({"type": "tool_args", "params": {"tool_name": "f", "expected_args": {"x": 1}}},
     {"type": "tool-args", "tool_name": "f", "expected_args": {"x": 1}}),
    ({"type": "tool_call_count", "params": {"tool": "f", "max": 2}},
     {"type": "tool-call-count", "tool": "f", "max": 2}),
    ({"type": "tool_call_sequence", "params": {"sequence": ["a", "b"]}},
     {"type": "tool-call-sequence", "value": ["a", "b"]}),
    ({"type": "no_tool_errors"}, {"type": "no-tool-errors"}),
    ({"type": "latency_budget", "params": {"max_ms": 500}}, {"type": "latency", "threshold": 500}),
    ({"type": "contains", "params": {"patterns": ["a"]}, "weight": 2, "metric": "m",
      "message": "dropped"}, {"type": "icontains-all", "value": ["a"], "weight": 2, "metric": "m"}),
]


@pytest.mark.parametrize("raw,expected", TRANSLATIONS)
def test_translation(raw, expected):
    assert is_promptkit(raw)
    assert translate(raw) == expected


@pytest.mark.parametrize("raw", [{"type": "contains", "value": "x"}, {"type": "regex", "value": "a"},
                                 {"type": "is-json"}, "contains", {"type": 3}])
def test_promptfoo_assertions_are_left_alone(raw):
    assert not is_promptkit(raw)


# PromptKit checks we also register under their own name: PromptKit-shaped even without
# `params`, so PromptKit's bookkeeping keys are dropped, not rejected as unknown fields
OWN_NAMES = [
    ({"type": "llm_judge", "criteria": "helpful", "message": "m", "severity": "high"},
     {"type": "llm_judge", "criteria": "helpful"}),
    ({"type": "llm_judge", "criteria": "Ünïcödé ✓", "id": ""}, {"type": "llm_judge",
                                                                  "criteria": "Ünïcödé ✓"}),
]


@pytest.mark.parametrize("raw,expected", OWN_NAMES)
def test_promptkit_names_we_register_stay_promptkit_shaped(raw, expected):
    assert is_promptkit(raw)
    assert translate(raw) == expected


TRANSLATION_ERRORS = [
    ({"type": "tools_caled", "params": {}}, 'unknown PromptKit check "tools_caled" (did you mean'),
    ({"type": "contains", "params": {"pattern": ["a"]}}, 'unknown param "pattern"'),
    ({"type": "json_valid", "params": {"x": 1}}, "it takes none"),
    ({"type": "contains", "params": ["a"]}, "params must be a mapping"),
    ({"type": "min_length", "params": {"min": 2, "min_chars": 3}}, "repeats another param"),
]


@pytest.mark.parametrize("raw,message", TRANSLATION_ERRORS)
def test_translation_errors_are_parse_errors(tmp_path, raw, message):
    assert message in parse_problems(tmp_path, {"tests": [{"assert": [raw]}]})


def test_translated_values_are_checked_like_any_assertion(tmp_path):
    raw = {"type": "min_length", "params": {"min": "three"}}
    assert "integer >= 0" in parse_problems(tmp_path, {"tests": [{"assert": [raw]}]})


# (PromptKit assertion, output, status, score)
TEXT_CASES = [
    ({"type": "contains", "params": {"patterns": ["thank you", "WELCOME"]}},
     "Thank you and welcome", "pass", 1.0),
    ({"type": "contains", "params": {"patterns": ["thank you", "welcome"]}}, "thank you", "fail", 0.0),
    ({"type": "contains_any", "params": {"patterns": ["x", "Ünï"]}}, "ünïcödé", "pass", 1.0),
    ({"type": "content_excludes", "params": {"patterns": ["ass"]}}, "a class act", "fail", 0.0),
    ({"type": "banned_words", "params": {"patterns": ["ass"]}}, "a class act", "pass", 1.0),
    ({"type": "banned_words", "params": {"patterns": ["ass"]}}, "what an ASS.", "fail", 0.0),
    ({"type": "banned_words", "params": {"words": ["c++"]}}, "", "pass", 1.0),
    ({"type": "min_length", "params": {"min": 3}}, "abc", "pass", 1.0),
    ({"type": "min_length", "params": {"min": 3}}, "ab", "fail", 0.0),
    ({"type": "min_length", "params": {"min": 3}}, "ünï", "pass", 1.0),  # characters, not bytes
    ({"type": "max_length", "params": {"max": 3}}, "abcd", "fail", 0.0),
    ({"type": "max_length", "params": {"max": 3}}, "", "pass", 1.0),
    ({"type": "sentence_count", "params": {"max": 2}}, "One. Two! Three?", "fail", 0.0),
    ({"type": "sentence_count", "params": {"max": 3}}, "One. Two! Three?", "pass", 1.0),
    ({"type": "sentence_count", "params": {"min": 1}}, "...", "pass", 1.0),  # PromptKit: >= 1
    ({"type": "sentence_count", "params": {"min": 1}}, "   ", "fail", 0.0),
    ({"type": "sentence_count", "params": {"max": 1}}, "No stop at the end", "pass", 1.0),
    ({"type": "field_presence", "params": {"fields": ["Name", "age", "zip"]}},
     '{"name": 1, "age": 2}', "fail", 2 / 3),
    ({"type": "field_presence", "params": {"fields": ["name"]}}, '{"NAME": 1}', "pass", 1.0),
    ({"type": "json_valid"}, '{"a": 1}', "pass", 1.0),
    ({"type": "json_valid"}, "{a: 1}", "fail", 0.0),
    ({"type": "json_schema", "params": {"schema": {"type": "object", "required": ["a"]}}},
     '{"b": 1}', "fail", 0.0),
    ({"type": "json_path", "params": {"expression": "order.status", "expected": "confirmed"}},
     '{"order": {"status": "confirmed"}}', "pass", 1.0),
    ({"type": "json_path", "params": {"expression": "order.status", "expected": "confirmed"}},
     '{"order": {"status": "open"}}', "fail", 0.0),
    ({"type": "json_path", "params": {"expression": "items[*].id", "contains": [2],
                                      "min_results": 2}}, '{"items": [{"id": 1}, {"id": 2}]}',
     "pass", 1.0),
    ({"type": "json_path", "params": {"expression": "items", "max_results": 1}},
     '{"items": [1, 2]}', "fail", 0.0),
    ({"type": "json_path", "params": {"expression": "n", "min": 1, "max": 5}}, '{"n": 5.0}',
     "pass", 1.0),
    ({"type": "json_path", "params": {"expression": "n", "min": 1, "max": 5}}, '{"n": "3"}',
     "fail", 0.0),
    ({"type": "json_path", "params": {"expression": "a", "expected": 1, "allow_wrapped": True}},
     'Here:\n```json\n{"a": 1}\n```', "pass", 1.0),
    ({"type": "json_path", "params": {"expression": "a", "expected": 1, "extract_json": True}},
     'The answer is {"a": 1} ok', "pass", 1.0),
    ({"type": "json_path", "params": {"expression": "a", "expected": 1}}, "not json", "fail", 0.0),
]


@pytest.mark.parametrize("raw,output,status,score", TEXT_CASES)
def test_text_checks(tmp_path, raw, output, status, score):
    [r] = results(tmp_path, raw, [{"output": output}])
    assert (r["status"], r["score"]) == (status, pytest.approx(score, abs=1e-6)), r["reason"]


def test_null_output_fails_text_checks(tmp_path):
    [r] = results(tmp_path, {"type": "min_length", "params": {"min": 0}}, [{"output": None}])
    assert (r["status"], r["reason"]) == ("fail", "output is null")


# (assertion, tool_calls (None: null in the column), status, reason fragment)
TOOL_CASES = [
    ({"type": "tools_called", "params": {"tool_names": ["get_weather", "create_ticket"]}},
     WEATHER, "pass", None),
    ({"type": "tools_called", "params": {"tool_names": ["get_weather"]}}, [], "fail",
     "called: no tools"),
    ({"type": "tools_called", "params": {"tool_names": ["get_weather"]}}, None, "fail", None),
    ({"type": "tools_not_called", "params": {"tool_names": ["delete_all"]}}, WEATHER, "pass", None),
    ({"type": "tools_not_called", "params": {"tool_names": ["create_ticket"]}}, WEATHER, "fail",
     None),
    ({"type": "tool_args", "params": {"tool_name": "get_weather",
                                      "expected_args": {"city": "Paris"}}}, WEATHER, "pass", None),
    ({"type": "tool_args", "params": {"tool_name": "get_weather",
                                      "expected_args": {"days": 3.0}}}, WEATHER, "pass", None),
    ({"type": "tool_args", "params": {"tool_name": "get_weather",
                                      "expected_args": {"city": "Rome"}}}, WEATHER, "fail",
     '"city": "Paris"'),
    ({"type": "tool_args", "params": {"tool_name": "nope", "expected_args": {}}}, WEATHER, "fail",
     "nope was not called"),
    ({"type": "tool_call_count", "params": {"max": 3}}, WEATHER, "pass", None),
    ({"type": "tool_call_count", "params": {"max": 2}}, WEATHER, "fail",
     "called: lookup_customer, get_weather, create_ticket"),
    ({"type": "tool_call_count", "params": {"tool": "get_weather", "min": 1, "max": 1}}, WEATHER,
     "pass", None),
    ({"type": "tool_call_count", "params": {"tool": "get_weather", "min": 2}}, WEATHER, "fail",
     None),
    ({"type": "tool_call_sequence", "params": {"sequence": ["lookup_customer", "create_ticket"]}},
     WEATHER, "pass", None),
    ({"type": "tool_call_sequence", "params": {"sequence": ["create_ticket", "lookup_customer"]}},
     WEATHER, "fail", None),
    ({"type": "no_tool_errors"}, WEATHER, "pass", None),
    ({"type": "no_tool_errors"}, [call("f"), call("g", error="timeout")], "fail", "g: timeout"),
    ({"type": "no_tool_errors", "params": {"tools": ["f"]}}, [call("g", error="x")], "pass", None),
    ({"type": "tools_called", "params": {"tool_names": ["ünï"]}}, [call("ünï")], "pass", None),
    ({"type": "tool_no_repeat"}, [call("f"), call("f")], "fail", "f(2x)"),
    ({"type": "tool_no_repeat", "params": {"tools": ["g"], "max_repeats": 2}},
     [call("f"), call("f"), call("f"), call("g")], "pass", None),
]


@pytest.mark.parametrize("assertion,row,status,reason", COLUMN_CASES)
def test_tool_no_repeat(tmp_path, assertion, row, status, reason):
    [got] = results(tmp_path, assertion, [row])
    assert got["status"] == status, got["reason"]
    if reason:
        assert reason in got["reason"]


@pytest.mark.parametrize("max_repeats", [0, -1, 1.5, "x", True])
def test_tool_no_repeat_needs_a_positive_whole_max(tmp_path, max_repeats):
    problems = parse_problems(tmp_path, {"tests": [{"assert": [
        {"type": "tool-no-repeat", "max_repeats": max_repeats}]}]})
    assert "max_repeats must be a whole number >= 1" in problems


@pytest.mark.parametrize("raw,calls,status,reason", TOOL_CASES)
def test_tool_checks(tmp_path, raw, calls, status, reason):
    rows = [{"output": "", "tool_calls": None if calls is None else json.dumps(calls)},
            {"output": "", "tool_calls": json.dumps([])}]
    got = results(tmp_path, raw, rows)
    assert got[0]["status"] == status, got[0]["reason"]
    if reason:
        assert reason in got[0]["reason"]


def test_tool_calls_as_a_nested_column(tmp_path):
    rows = [{"output": None, "tool_calls": [{"id": "1", "type": "function",
                                             "function": {"name": "f", "arguments": "{}"}}]}]
    [r] = results(tmp_path, {"type": "tools_called", "params": {"tool_names": ["f"]}}, rows)
    assert r["status"] == "pass"  # a null output is fine: tool checks read tool_calls


def test_no_tool_calls_column_is_an_error(tmp_path):
    [r] = results(tmp_path, {"type": "tools-called", "value": ["f"]}, [{"output": "x"}])
    assert r["status"] == "error" and "no tool_calls recorded" in r["reason"]


@pytest.mark.parametrize("calls", ["not json", ""])  # "" alone: Polars decodes no row
def test_invalid_tool_calls_is_an_error(tmp_path, calls):
    [r] = results(tmp_path, {"type": "tools-called", "value": ["f"]},
                  [{"output": "x", "tool_calls": calls}])
    assert r["status"] == "error" and "tool_calls is not valid" in r["reason"]


def test_latency_budget(tmp_path):
    rows = [{"output": "x", "latency_ms": 300}, {"output": "x", "latency_ms": 900},
            {"output": "x", "latency_ms": None}]
    got = results(tmp_path, {"type": "latency_budget", "params": {"max_ms": 500}}, rows)
    assert [r["status"] for r in got] == ["pass", "fail", "error"]


# tool_calls values Polars cannot decode as a list of calls: parsed once per distinct value
FALLBACK = [
    ('{"tool_calls": [{"function": {"name": "f"}}]}', "pass"),  # a wrapping object
    ('[{"name": "f", "arguments": {"a": 1}}]', "pass"),  # bare calls, object arguments
    ('[{"function": "f"}]', "error"),
    ("[1]", "error"),
]


@pytest.mark.parametrize("calls,status", FALLBACK)
def test_tool_names_fallback(tmp_path, calls, status):
    rows = [{"output": "", "tool_calls": calls}, {"output": "", "tool_calls": "[]"}]
    got = results(tmp_path, {"type": "tools-called", "value": ["f"]}, rows)
    assert [r["status"] for r in got] == [status, "fail"]


@pytest.mark.parametrize("calls,status", [
    ('[{"name": "f", "arguments": {"a": 1}}]', "pass"),  # object arguments: fallback path
    ('[{"function": {"name": "f", "arguments": "{\\"a\\": 1.0}"}}]', "pass"),
    ('[{"function": {"name": "f", "arguments": "not json"}}]', "fail"),
    ('[{"function": {"name": "g", "arguments": "{\\"a\\": 1}"}}]', "fail"),
    ("[1]", "error"),
])
def test_tool_args_paths(tmp_path, calls, status):
    rows = [{"output": "", "tool_calls": calls}]
    [r] = results(tmp_path, {"type": "tool-args", "tool_name": "f", "expected_args": {"a": 1}},
                  rows)
    assert r["status"] == status, r["reason"]

"""is-json and contains-json (promptfoo §5.1, §5.2): strict parse, extraction, JSON Schema."""

import pytest

SCHEMA = {"type": "object", "required": ["a"], "properties": {"a": {"type": "number"}}}
PASS, FAIL = ("pass", 1.0), ("fail", 0.0)

CASES = [
    ({"type": "is-json"}, '{"a": 1}', PASS),
    ({"type": "is-json"}, '  [1, 2] \n', PASS),
    ({"type": "is-json"}, "42", PASS),  # any JSON value
    ({"type": "is-json"}, '"hi"', PASS),
    ({"type": "is-json"}, "null", PASS),
    ({"type": "is-json"}, "NaN", FAIL),  # JSON.parse rejects NaN
    ({"type": "is-json"}, '{"a": 1,}', FAIL),  # trailing comma
    ({"type": "is-json"}, "{'a': 1}", FAIL),
    ({"type": "is-json"}, '```json\n{"a": 1}\n```', FAIL),
    ({"type": "is-json"}, "", FAIL),
    ({"type": "is-json"}, '{"名前": "値"}', PASS),
    ({"type": "not-is-json"}, "plain text", PASS),
    ({"type": "is-json", "value": SCHEMA}, '{"a": 1}', PASS),
    ({"type": "is-json", "value": SCHEMA}, '{"a": "x"}', FAIL),
    ({"type": "is-json", "value": SCHEMA}, '{"b": 1}', FAIL),
    ({"type": "not-is-json", "value": SCHEMA}, '{"b": 1}', PASS),
    ({"type": "is-json", "value": "type: object\nrequired: [a]"}, '{"a": 1}', PASS),  # YAML text
    ({"type": "contains-json"}, 'Here: {"a": 1} done', PASS),
    ({"type": "contains-json"}, "Hello {name}!", PASS),  # YAML flow parse: {name: null}
    ({"type": "contains-json"}, "[1, 2]", FAIL),  # top-level arrays are never found
    ({"type": "contains-json"}, '[{"a": 1}]', PASS),
    ({"type": "contains-json"}, '{"a": {"b": 1', PASS),  # truncated JSON is auto-closed
    ({"type": "contains-json"}, "{}", PASS),
    ({"type": "contains-json"}, "no braces at all", FAIL),
    ({"type": "contains-json"}, "{a: 1, 'b': 'x',} // note", PASS),  # lenient like js-yaml
    ({"type": "not-contains-json"}, "no json", PASS),
    ({"type": "contains-json", "value": SCHEMA}, 'x {"b": 1} y {"a": 2}', PASS),  # 2nd matches
    ({"type": "contains-json", "value": SCHEMA}, 'x {"b": 1}', FAIL),
    ({"type": "not-contains-json", "value": SCHEMA}, 'x {"b": 1}', PASS),
]


@pytest.mark.parametrize("assertion,output,expected", CASES)
def test_json_verdicts(check, assertion, output, expected):
    assert check(assertion, output) == expected


def test_schema_failure_reason_names_the_problem(tmp_path):
    from conftest import run

    r = run(tmp_path, {"defaultTest": {"assert": [{"type": "is-json", "value": SCHEMA}]}},
            [{"output": '{"a": "x"}'}])
    reason = r.assertion_results["reason"][0]
    assert reason.startswith("Expected output to be valid JSON matching the schema: ")
    assert "number" in reason and "a" in reason


def test_object_outputs_are_json_not_text(tmp_path):
    from conftest import run

    r = run(tmp_path, {"defaultTest": {"assert": [{"type": "is-json"},
                                                  {"type": "contains", "value": "a"}]}},
            [{"output": {"a": 1}}])
    rows = r.assertion_results.sort("assertion_index")
    assert rows["status"].to_list() == ["pass", "fail"]
    assert rows["reason"][1] == "output is not text (a JSON value)"
    assert r.cases["output"][0] == '{"a":1}'

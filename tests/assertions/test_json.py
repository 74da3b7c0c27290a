"""is-json and contains-json (promptfoo's assertions/json.ts): strict parse, extraction, JSON Schema."""

import pytest
from fixtures.tables.json import CASES, FAIL, PASS, SCHEMA


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


def _reference_span(text: str, start: int, limit: int) -> tuple[int | None, int]:
    """Brace counting one character at a time: the reference for the str.find scan."""
    depth = 0
    for i, ch in enumerate(text[start:start + limit], start):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth == 0:
            return i + 1, 0
    return None, depth


SPANS = [
    '{"a": 1}', '{"a": "}"} tail', '{"a": "{"} tail', '{{"a":1}', "x { y { z", '}{"a":1}',
    '{"a": {"b": 1}', 'pre {"a": [1, {"b": 2}]} post {"c": 3}', '{"a": "é", "b": "😀"}',
    '「{"鍵": "値"}」', '{"a": 1}}}', "{}{}", "{", "{" * 5 + "}" * 3, "{" + "}" * 3, "",
    "no braces", "{ 😀 { é } 中 }",
]


@pytest.mark.parametrize("text", SPANS)
@pytest.mark.parametrize("limit", [100_000, 3])
def test_brace_span_matches_character_count(monkeypatch, text, limit):
    """The span contains-json parses from each `{`: same end and depth as counting each
    character, also when the span is cut at MAX_SPAN characters."""
    from checkllm_batch.js import jsontext

    monkeypatch.setattr(jsontext, "MAX_SPAN", limit)
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        assert jsontext._balanced_end(text, start) == _reference_span(text, start, limit)


CONST_X = {"type": "object", "properties": {"v": {"const": "x"}}}
MAX_ONE = {"type": "object", "properties": {"v": {"type": "string", "maxLength": 1}}}
# a lone surrogate escape parses (JSON.parse keeps it) and is checked against the schema;
# the validator takes none, so it stands in as U+FFFD: the schema's own message, never
# "cannot check against the schema"
SURROGATES = [
    ("is-json", CONST_X, '{"v": "\\ud800"}', "fail", '"x" was expected (at v)'),
    ("contains-json", CONST_X, 'x {"v": "\\ud800"} y', "fail", '"x" was expected (at v)'),
    ("contains-json", CONST_X, '{"v": "\\udc00"}', "fail", '"x" was expected (at v)'),
    ("is-json", CONST_X, '{"v": "\\ud83d\\ude00"}', "fail", '"x" was expected (at v)'),  # a pair
    ("is-json", MAX_ONE, '{"v": "\\ud800"}', "pass", None),  # one code unit
    ("is-json", MAX_ONE, '{"v": "\\ud800x"}', "fail", "is longer than 1 character (at v)"),
    ("is-json", CONST_X, '{"v": "x"}', "pass", None),
    ("is-json", CONST_X, '{"v": ""}', "fail", '"x" was expected (at v)'),
]


@pytest.mark.parametrize("kind,schema,output,status,ending", SURROGATES)
def test_lone_surrogates_meet_the_schema(tmp_path, kind, schema, output, status, ending):
    from conftest import run

    r = run(tmp_path, {"defaultTest": {"assert": [{"type": kind, "value": schema}]}},
            [{"output": output}])
    assert r.assertion_results["status"][0] == status
    reason = r.assertion_results["reason"][0]
    assert "cannot check" not in (reason or "")
    if ending:
        assert reason.endswith(ending), reason


def _v(schema: dict) -> dict:
    return {"type": "object", "properties": {"v": schema}}


# ajv's default dialect is draft-07 with ajv's own extras (verdicts as promptfoo gave them,
# tests/promptfoo_kit/unit-json.jsonl)
AJV = [
    ({"type": "array", "items": [{"type": "string"}, {"type": "number"}]}, '["x", 1]', PASS),
    ({"type": "array", "items": [{"type": "string"}, {"type": "number"}]}, '[1, "x"]', FAIL),
    (_v({"multipleOf": 0.1}), '{"v": 0.3}', FAIL),  # 0.3 / 0.1 is 2.9999999999999996
    (_v({"multipleOf": 0.1}), '{"v": 0.5}', PASS),
    (_v({"multipleOf": 1}), '{"v": 1e21}', FAIL),  # JavaScript prints 1e+21
    (_v({"multipleOf": 2}), '{"v": 9007199254740993}', PASS),  # read as 2**53
    (_v({"multipleOf": 1}), '{"v": 1e400}', PASS),  # Infinity: not checked
    (_v({"type": "string", "contentEncoding": "base64"}), '{"v": "x"}', PASS),
    (_v({"type": "number", "nullable": True}), '{"v": null}', PASS),
    (_v({"type": "number", "nullable": True}), '{"v": "x"}', FAIL),
    (_v({"type": "string", "format": "duration"}), '{"v": "P1W"}', PASS),
    (_v({"type": "string", "format": "duration"}), '{"v": "PT"}', FAIL),
    (_v({"const": {"format": "int32"}}), '{"v": {"format": "int32"}}', PASS),  # data, no schema
    (_v({"enum": [{"format": "iri"}]}), '{"v": {"format": "iri"}}', PASS),
]


@pytest.mark.parametrize("schema,output,expected", AJV)
def test_schemas_read_as_ajv_reads_them(check, schema, output, expected):
    assert check({"type": "is-json", "value": schema}, output) == expected


@pytest.mark.parametrize("schema", [
    {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"},
    {"$schema": 7, "type": "object"},
    _v({"type": "string", "format": "idn-email"}),  # jsonschema-rs knows it, ajv-formats not
    _v({"type": "string", "format": "iri"}),
])
def test_schemas_ajv_refuses_are_refused(check, schema):
    with pytest.raises(Exception, match="JSON Schema"):
        check({"type": "is-json", "value": schema}, '{"v": "a@b.co"}')

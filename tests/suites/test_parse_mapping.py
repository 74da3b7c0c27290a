"""A suite given as a mapping (`cb.load(dict)`) is checked exactly as the same suite in a file:
the same problems in the same order, each placed by its key path instead of file:line."""

from __future__ import annotations

import json

import polars as pl
import pytest

import checkllm_batch as cb
from checkllm_batch.errors import Where
from checkllm_batch.js.yaml12 import load_yaml_text

# suites as YAML; each is loaded from a file and, as plain Python data, from a mapping
SUITES = [
    ("typo in a type", "tests:\n  - assert:\n      - {type: contians, value: x}\n"),
    ("typo in a field", "tests:\n  - assert:\n      - {type: contains, vlaue: x}\n"),
    ("value missing", "tests:\n  - assert:\n      - type: equals\n"),
    ("test field", "tests:\n  - threshold: high\n    assert: [{type: contains, value: x}]\n"),
    ("top-level key", "tset: []\ntests:\n  - assert: [{type: contains, value: x}]\n"),
    ("judge setting", "judge: {retries: x, modle: m}\ntests:\n  - assert: [{type: contains, value: x}]\n"),
    ("defaultTest", "defaultTest: {asert: []}\ntests:\n  - assert: [{type: contains, value: x}]\n"),
    ("PromptKit param", "tests:\n  - assert:\n      - {type: banned_words, params: {wrds: [a]}}\n"),
    ("duplicate ids", "tests:\n  - {id: a, assert: [{type: contains, value: x}]}\n"
                      "  - {id: a, assert: [{type: contains, value: y}]}\n"),
    ("no assertions", "tests:\n  - vars: {q: 1}\n"),
    ("empty tests", "tests: []\n"),
    ("cannot run", "tests:\n  - assert:\n      - {type: javascript, value: 'output.length'}\n"
                   "      - {type: not-not-contains, value: x}\n"),
    ("nested assert-set", "tests:\n  - assert:\n      - type: assert-set\n        assert:\n"
                          "          - {type: assert-set, assert: [{type: contains, value: x}]}\n"),
    ("bad regex", "tests:\n  - assert:\n      - {type: regex, value: '(('}\n"),
    ("unicode", "tests:\n  - description: \"caf\u00e9 \u2603\"\n    assert:\n"
                "      - {type: contians, value: \"\u00e9\"}\n      - {type: equals}\n"),
    ("top-level assert", "assert: [{type: contains}]\ntests:\n  - vars: {q: 1}\n"),
    ("derived metric", "derivedMetrics: [{name: r, value: 'nope + 1'}]\n"
                       "tests:\n  - assert: [{type: contains, value: x, metric: m}]\n"),
    ("provider tools", "providers: [{id: p, config: {tools: 'file://missing.json'}}]\n"
                       "tests:\n  - assert: [{type: contains, value: x}]\n"),
]


def _problems(source) -> list:
    with pytest.raises(cb.ConfigError) as e:
        cb.load(source)
    return e.value.problems


def _as_data(text: str) -> dict:
    """The YAML as plain Python data (dicts and lists), as a notebook user writes it."""
    return json.loads(json.dumps(load_yaml_text(text, "suite.yaml")))


@pytest.mark.parametrize("text", [t for _, t in SUITES], ids=[n for n, _ in SUITES])
def test_a_mapping_has_the_problems_of_the_same_file(tmp_path, monkeypatch, text):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "suite.yaml").write_text(text, encoding="utf-8")
    from_file, from_data = _problems("suite.yaml"), _problems(_as_data(text))
    assert from_file  # every suite of the table has a problem
    assert [p.message for p in from_data] == [p.message for p in from_file]
    assert [(p.where.test, p.where.assertion) for p in from_data] == \
        [(p.where.test, p.where.assertion) for p in from_file]
    assert all(p.where.file is None and p.where.line is None for p in from_data)


def test_a_typo_gets_the_same_did_you_mean():
    [problem] = _problems({"tests": [{"assert": [{"type": "contians", "value": "x"}]}]})
    assert str(problem) == ('<suite>: tests[0].assert[0], test 1, assert 1 (contians): unknown '
                            'assertion type "contians" (did you mean "contains"?)')


@pytest.mark.parametrize("suite,place", [
    ({"tests": [{"assert": [{"type": "contains", "vlaue": "x"}]}]},
     "<suite>: tests[0].assert[0], test 1, assert 1 (contains)"),
    ({"defaultTest": {"assert": [{"type": "equals"}]}, "tests": [{"vars": {"q": ""}}]},
     "<suite>: defaultTest.assert[0], test 1, assert 1 (equals)"),
    ({"tests": [{"assert": [{"type": "contains", "value": "x"}]},
                {"threshold": "high", "assert": [{"type": "contains", "value": "x"}]}]},
     "<suite>: tests[1], test 2"),
    ({"judge": {"retries": "x"}, "tests": [{"assert": [{"type": "contains", "value": "x"}]}]},
     "<suite>: judge, judge"),
    ({"tests": [{"assert": [{"type": "assert-set", "assert": [{"type": "equals"}]}]}]},
     "<suite>: tests[0].assert[0].assert[0], test 1, assert 1.1 (equals)"),
])
def test_each_problem_is_placed_by_its_key_path(suite, place):
    assert [str(p.where) for p in _problems(suite)][:1] == [place]


def test_key_paths_quote_keys_that_are_not_names():
    suite = {"tests": [{"vars": {"a b": {"x": 1}}, "assert": [{"type": "contains", "vlaue": 1}]}]}
    assert str(_problems(suite)[0].where).startswith("<suite>: tests[0].assert[0]")
    assert str(Where(key="tests[0].vars['a b']")) == "<suite>: tests[0].vars['a b']"


def test_a_valid_mapping_reads_as_the_same_file(tmp_path):
    text = ("description: d\ndefaultTest: {vars: {who: w}}\ntests:\n  - id: t\n    vars: {q: 1}\n"
            "    assert:\n      - {type: icontains, value: '{{who}}', metric: m, weight: 2}\n"
            "      - type: assert-set\n        threshold: 0.5\n        assert:\n"
            "          - {type: contains, value: a}\n          - {type: not-equals, value: b}\n")
    (tmp_path / "suite.yaml").write_text(text)
    from_file, from_data = cb.load(tmp_path / "suite.yaml"), cb.load(_as_data(text))
    assert from_data.tests == from_file.tests
    assert from_data.to_json() | {"path": None} == from_file.to_json() | {"path": None}
    assert from_data.path == "<suite>" and from_data.files == ()


def test_tests_files_of_a_mapping_are_read_from_the_current_folder(tmp_path, monkeypatch):
    (tmp_path / "cases.csv").write_text("q,__expected\nhi,contains:h\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    suite = cb.load({"tests": "file://cases.csv"})
    assert [(t.vars, t.asserts[0].type) for t in suite.tests] == [({"q": "hi"}, "contains")]
    assert suite.files == (str(tmp_path / "cases.csv"),)
    [problem] = _problems({"tests": "file://nope.csv"})
    assert str(problem) == "nope.csv: tests file not found"


def test_a_mapping_does_not_change_the_callers_data():
    suite = {"tests": [{"assert": [{"type": "contains", "value": "x"}]}]}
    before = json.dumps(suite)
    cb.load(suite)
    assert json.dumps(suite) == before and type(suite["tests"][0]) is dict


def test_evaluate_takes_a_mapping():
    suite = {"tests": [{"assert": [{"type": "contains", "value": "Paris"}]}]}
    run = cb.evaluate(suite, pl.DataFrame({"output": ["Paris, France", "Lyon", ""]}))
    assert run.test_results["status"].to_list() == ["pass", "fail", "fail"]

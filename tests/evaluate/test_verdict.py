"""Test results: weighted score, pass, threshold (0 included), metric-only, errors (the rule
of evaluate/verdict.py)."""

import pytest
from conftest import run

EQ = {"type": "equals", "value": "Hello world", "weight": 2}
CONTAINS = {"type": "contains", "value": "world"}

CASES = [
    # (test fields, assertions, output, expected (status, score))
    ({}, [EQ, CONTAINS], "Hello world", ("pass", 1.0)),
    ({}, [EQ, CONTAINS], "world", ("fail", 1 / 3)),  # promptfoo's worked example
    ({"threshold": 0.5}, [EQ, CONTAINS], "world", ("fail", 1 / 3)),
    ({"threshold": 0.2}, [EQ, CONTAINS], "world", ("pass", 1 / 3)),
    ({"threshold": 0}, [EQ, CONTAINS], "nothing", ("pass", 0.0)),  # [N]: 0 is honoured
    ({}, [], "anything", ("pass", 1.0)),  # no assertions
    # only metric-only assertions: their weights sum to 0, so the score is 0 (promptfoo 0.123.1)
    ({}, [{"type": "contains", "value": "zzz", "weight": 0}], "x", ("pass", 0.0)),
    ({"threshold": 0.5}, [{"type": "contains", "value": "x", "weight": 0}], "x", ("fail", 0.0)),
    # an error counts even in a metric-only assertion (promptfoo: the whole test errors)
    ({}, [CONTAINS, {"type": "cost", "threshold": 1, "weight": 0}], "world", ("error", None)),
    ({}, [{"type": "contains", "value": "zzz", "metricOnly": True}, CONTAINS], "world",
     ("pass", 1.0)),
    ({}, [CONTAINS, {"type": "llm-rubric", "value": "polite"}], "world", ("error", None)),
]


@pytest.mark.parametrize("test,asserts,output,expected", CASES)
def test_test_verdicts(tmp_path, test, asserts, output, expected):
    # a second test keeps the suite from having no assertion at all (a parse error)
    other = {"description": "other", "assert": [CONTAINS]}
    r = run(tmp_path, {"tests": [{"description": "t", **test, "assert": asserts}, other]},
            [{"output": output, "test_id": "t"}])
    row = r.test_results.row(0, named=True)
    assert row["status"] == expected[0]
    if expected[1] is None:
        assert row["score"] is None and row["pass"] is None
    else:
        assert row["score"] == pytest.approx(expected[1])
        assert row["pass"] is (expected[0] == "pass")


def test_threshold_reason(tmp_path):
    r = run(tmp_path, {"tests": [{"threshold": 0.5, "assert": [EQ, CONTAINS]}]},
            [{"output": "world"}])
    assert r.test_results["reason"][0] == "Aggregate score 0.33 < 0.5 threshold"


REASONS = [
    # (test, output, reason): as promptfoo 0.123.1 words them
    ({"assert": [CONTAINS, {"type": "contains", "value": "a"}, {"type": "contains", "value": "b"}]},
     "world", 'Expected output to contain "b"'),  # the last failure (promptfoo overwrites it)
    ({"assert": [{"type": "assert-set", "assert": [{"type": "contains", "value": "s"}]},
                 {"type": "contains", "value": "b"}]},
     "world", 'Expected output to contain "s"'),  # sets come last, after every assertion
    ({"assert": [CONTAINS]}, "world", "All assertions passed"),
    ({"assert": []}, "world", "No assertions"),
    ({"threshold": 0, "assert": [{"type": "contains", "value": "a"}]}, "world",
     "Aggregate score 0.00 ≥ 0 threshold"),
    ({"threshold": 1, "assert": [CONTAINS, {"type": "python", "value": "0.25"}]}, "world",
     "Aggregate score 0.63 < 1 threshold"),  # toFixed(2): the exact double, halves up
    ({"threshold": 0.5, "assert": [{"type": "python", "value": "0.125"}]}, "world",
     "Aggregate score 0.13 < 0.5 threshold"),
]


@pytest.mark.parametrize("test,output,reason", REASONS)
def test_test_reasons_are_promptfoos(tmp_path, test, output, reason):
    other = {"description": "other", "assert": [CONTAINS]}
    r = run(tmp_path, {"tests": [{"description": "t", **test}, other]},
            [{"output": output, "test_id": "t"}])
    assert r.test_results["reason"][0] == reason


def test_model_graded_without_judge_is_an_error_not_a_pass(tmp_path):
    r = run(tmp_path, {"defaultTest": {"assert": [{"type": "llm-rubric", "value": "polite"},
                                                  {"type": "factuality", "value": "x"}]}},
            [{"output": "hi"}, {"output": None}])
    a = r.assertion_results
    assert set(a["status"]) == {"error"} and set(a["reason"]) == {"no judge configured"}
    assert a["pass"].null_count() == 4 and a["score"].null_count() == 4
    assert set(r.test_results["status"]) == {"error"}


def test_metric_only_feeds_metrics_with_weight_one(tmp_path):
    r = run(tmp_path, {"defaultTest": {"assert": [
        {"type": "contains", "value": "a", "metric": "m", "weight": 0},
        {"type": "contains", "value": "b", "metric": "m", "weight": 3}]}},
        [{"output": "a"}, {"output": "ab"}])
    m = r.named_metrics.row(0, named=True)
    # case 1: a=1 (w1), b=0 (w3); case 2: a=1 (w1), b=1 (w3)
    assert (m["sum"], m["weight"], m["count"]) == (1 + 0 + 1 + 3, 8.0, 4)


def test_every_input_row_gets_a_test_result(tmp_path):
    rows = [{"output": o} for o in ["x", None, "", "ünïcödé", "{}"]] * 3
    r = run(tmp_path, {"defaultTest": {"assert": [CONTAINS, {"type": "is-json"}]}}, rows,
            batch_rows=4)
    assert r.test_results.height == len(rows)
    assert r.test_results["case_id"].to_list() == list(range(len(rows)))
    assert r.assertion_results.height == 2 * len(rows)


def test_batch_size_does_not_change_results(tmp_path):
    rows = [{"output": f"answer {i} " + ("world" if i % 3 else "{}"), "p": f"{i % 5}"}
            for i in range(50)]
    suite = {"defaultTest": {"assert": [CONTAINS, {"type": "is-json"},
                                        {"type": "regex", "value": "{{p}}"},
                                        {"type": "levenshtein", "value": "answer 1 world"}]}}
    small = run(tmp_path, suite, rows, batch_rows=7).assertion_results
    large = run(tmp_path, suite, rows).assertion_results
    assert small.equals(large)


def test_tests_with_their_own_assertions_and_shared_ones(tmp_path):
    suite = {"defaultTest": {"assert": [{"type": "contains", "value": "{{city}}"}]},
             "tests": [{"description": "fr", "vars": {"city": "Paris"},
                        "assert": [{"type": "starts-with", "value": "The"}]},
                       {"description": "it", "vars": {"city": "Rome"}}]}
    rows = [{"test_id": "fr", "output": "The capital is Paris"},
            {"test_id": "it", "output": "The capital is Paris"},
            {"test_id": "fr", "output": "Paris"}]
    r = run(tmp_path, suite, rows)
    assert r.test_results.sort("case_id")["status"].to_list() == ["pass", "fail", "fail"]
    assert r.assertion_results.height == 2 + 1 + 2
    assert r.cases.sort("case_id")["description"].to_list() == ["fr", "it", "fr"]

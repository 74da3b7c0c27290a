"""`assert-set`: a mini-test with its own threshold, weight and metric (as promptfoo's
`src/assertions/assertionsResult.ts` scores a set's members)."""

from __future__ import annotations

import functools
import operator
import random

import polars as pl
import pytest
from conftest import write_suite
from fixtures.suites import parse_problems, run

import checkllm_batch as cb

# a weighted pair (equals with weight 2, contains): "world" scores 1/3, as members of a set.
EXAMPLE = [{"type": "equals", "value": "Hello world", "weight": 2},
           {"type": "contains", "value": "world"}]

# (set fields, output, set status, set score, test status, test score)
CASES = [
    ({}, "world", "fail", 1 / 3, "fail", 1 / 3),
    ({"threshold": 0.5}, "world", "fail", 1 / 3, "fail", 1 / 3),
    ({"threshold": 0.2}, "world", "pass", 1 / 3, "pass", 1 / 3),
    ({"threshold": 0}, "", "pass", 0.0, "pass", 0.0),  # [N]: threshold 0 is honoured
    ({}, "Hello world", "pass", 1.0, "pass", 1.0),
    ({}, "", "fail", 0.0, "fail", 0.0),
    ({}, "Ünïcödé world ✓", "fail", 1 / 3, "fail", 1 / 3),
]


@pytest.mark.parametrize("fields,output,set_status,set_score,test_status,test_score", CASES)
def test_worked_example_inside_a_set(tmp_path, fields, output, set_status, set_score,
                                     test_status, test_score):
    r = run(tmp_path, [{"type": "assert-set", "assert": EXAMPLE, **fields}], [{"output": output}])
    top = r.assertion_results.filter(pl.col("parent_index").is_null())
    assert top["status"].to_list() == [set_status]
    assert top["score"][0] == pytest.approx(set_score, abs=1e-6)
    t = r.test_results
    assert t["status"][0] == test_status and t["score"][0] == pytest.approx(test_score, abs=1e-6)


def test_members_are_visible_with_parent_index(tmp_path):
    asserts = [{"type": "contains", "value": "a"},
               {"type": "assert-set", "assert": EXAMPLE}]
    rows = run(tmp_path, asserts, [{"output": "world"}]).assertion_results
    assert rows.select("assertion_index", "parent_index", "type", "status").rows() == [
        (0, None, "contains", "fail"), (1, None, "assert-set", "fail"),
        (0, 1, "equals", "fail"), (1, 1, "contains", "pass")]


def test_set_weight_counts_in_the_test_score(tmp_path):
    asserts = [{"type": "assert-set", "weight": 3, "threshold": 0.2, "assert": EXAMPLE},
               {"type": "contains", "value": "zzz"}]
    t = run(tmp_path, asserts, [{"output": "world"}]).test_results
    assert t["score"][0] == pytest.approx((3 * (1 / 3) + 0) / 4, abs=1e-6)
    assert t["status"][0] == "fail"


def test_member_error_makes_the_set_and_test_errors(tmp_path):
    asserts = [{"type": "assert-set", "assert": [{"type": "contains", "value": "a"},
                                                 {"type": "latency", "value": 100}]}]
    r = run(tmp_path, asserts, [{"output": "a"}])
    top = r.assertion_results.filter(pl.col("parent_index").is_null())
    assert (top["status"][0], top["score"][0]) == ("error", None)
    assert "latency_ms" in top["reason"][0]
    assert r.test_results["status"][0] == "error"


def test_metric_only_member_is_recorded_but_not_scored(tmp_path):
    members = [{"type": "contains", "value": "a"},
               {"type": "contains", "value": "zzz", "weight": 0, "metric": "zzz"}]
    r = run(tmp_path, [{"type": "assert-set", "metric": "set", "assert": members}],
            [{"output": "a"}, {"output": "b"}])
    top = r.assertion_results.filter(pl.col("parent_index").is_null())
    assert top["status"].to_list() == ["pass", "fail"]
    metrics = {m["metric"]: (m["sum"], m["count"]) for m in r.named_metrics.to_dicts()}
    assert metrics == {"set": (1.0, 2), "zzz": (0.0, 2)}  # members' metrics propagate up


def test_a_shared_member_and_top_level_assertion_are_both_recorded(tmp_path):
    asserts = [{"type": "contains", "value": "a"},
               {"type": "assert-set", "assert": [{"type": "contains", "value": "a"}]}]
    rows = run(tmp_path, asserts, [{"output": "a"}]).assertion_results
    assert rows.height == 3 and set(rows["status"]) == {"pass"}


PARSE_ERRORS = [
    ({"type": "assert-set", "assert": [{"type": "assert-set", "assert": EXAMPLE}]},
     "assert 1.1 (assert-set): an assert-set cannot contain another assert-set"),
    ({"type": "not-assert-set", "assert": EXAMPLE}, "has no not- form"),
    ({"type": "assert-set", "assert": []}, "non-empty list"),
    ({"type": "assert-set"}, "assert-set needs `assert`"),
    ({"type": "assert-set", "assert": [{"type": "contians", "value": "x"}]},
     'assert 1.1 (contians): unknown assertion type "contians" (did you mean "contains"?)'),
    ({"type": "assert-set", "value": "x", "assert": EXAMPLE}, "assert-set takes no value"),
    ({"type": "asert-set", "assert": EXAMPLE},  # a set is no registered type, yet known
     'unknown assertion type "asert-set" (did you mean "assert-set"?)'),
    ({"type": "assert-set", "assert": EXAMPLE, "treshold": 0.5},
     'unknown field "treshold" for assert-set (did you mean "threshold"?)'),
]


@pytest.mark.parametrize("assertion,message", PARSE_ERRORS)
def test_parse_errors(tmp_path, assertion, message):
    assert message in parse_problems(tmp_path, {"tests": [{"assert": [assertion]}]})


def test_three_sets_as_promptfoo_0_123_1_scores_them(tmp_path):
    """Checked with promptfoo 0.123.1 offline: set scores 1/3 (pass), 1/3 (fail), 0 (pass
    with threshold 0); test score 2/9, test fails."""
    asserts = [{"type": "assert-set", "threshold": 0.2, "assert": EXAMPLE},
               {"type": "assert-set", "assert": EXAMPLE},
               {"type": "assert-set", "threshold": 0,
                "assert": [{"type": "equals", "value": "Hello world"}]}]
    r = run(tmp_path, asserts, [{"output": "world"}])
    top = r.assertion_results.filter(pl.col("parent_index").is_null())
    assert top.select("status", "score").rows() == [
        ("pass", pytest.approx(1 / 3)), ("fail", pytest.approx(1 / 3)), ("pass", 0.0)]
    assert "Aggregate score 0.33 ≥ 0.2 threshold" == top["reason"][0]
    assert r.test_results.select("status", "score").rows() == [("fail", pytest.approx(2 / 9))]


def test_migrations_add_columns_to_an_older_database(tmp_path, monkeypatch):
    import duckdb

    from checkllm_batch.store import schema
    con = duckdb.connect(str(tmp_path / "old.duckdb"))
    full = list(schema.MIGRATIONS)
    monkeypatch.setattr(schema, "MIGRATIONS", full[:2])  # a database from before parent_index
    schema.migrate(con)
    monkeypatch.setattr(schema, "MIGRATIONS", full)
    schema.migrate(con)  # views that read assertion_results do not block the ALTERs
    columns = [c[0] for c in con.sql("DESCRIBE assertion_results").fetchall()]
    added = columns[columns.index("parent_index"):]
    assert added[:3] == ["parent_index", "named_scores", "votes"]
    assert {"cascade_stage", "confidence", "certified"} <= set(added)


def test_the_score_adds_members_in_order_as_promptfoo_does(tmp_path):
    """promptfoo 0.123.1: weights 0.7, 0.1, 0.2 pass and 0.3 fails: (0.7+0.1+0.2) / (0.7+0.1+
    0.2+0.3) added left to right is 0.7692307692307692, below a threshold of ...693."""
    members = [{"type": "contains", "value": "a", "weight": w} for w in (0.7, 0.1, 0.2)]
    members.append({"type": "contains", "value": "zzz", "weight": 0.3})
    r = run(tmp_path, [{"type": "assert-set", "threshold": 0.7692307692307693,
                        "assert": members}], [{"output": "a"}])
    top = r.assertion_results.filter(pl.col("parent_index").is_null())
    assert top.select("status", "score").rows() == [("fail", 0.7692307692307692)]


def test_a_tests_score_adds_its_assertions_in_order_too(tmp_path):
    """The test's own score, over top-level assertions, adds as promptfoo does: the same
    weights give 0.7692307692307692 (...693 if added in another order), below the threshold."""
    asserts = [{"type": "contains", "value": "a", "weight": w} for w in (0.7, 0.1, 0.2)]
    asserts.append({"type": "contains", "value": "zzz", "weight": 0.3})
    path = write_suite(tmp_path, {"tests": [{"threshold": 0.7692307692307693,
                                             "assert": asserts}]})
    tests = cb.evaluate(cb.load(path), pl.DataFrame({"output": ["a"]})).test_results
    assert tests.select("status", "score").rows() == [("fail", 0.7692307692307692)]


def test_a_list_sum_adds_left_to_right():
    """in_order relies on it: Polars' list.sum is the sequential sum, up to long lists."""
    rng = random.Random(7)
    lists = [[rng.choice([0.1, 0.2, 0.3, 0.7, 1 / 3, rng.random()]) for _ in range(n)]
             for n in [*range(1, 40), 130, 600]]
    assert pl.Series(lists).list.sum().to_list() == [functools.reduce(operator.add, v)
                                                     for v in lists]

"""`expression`: DuckDB SQL (default) or Polars SQL over the case's columns, run per batch."""

from __future__ import annotations

import pytest
from fixtures.suites import parse_problems, results

ROWS = [{"output": "Paris is nice", "city": "Paris"}, {"output": "", "city": "Rome"},
        {"output": None, "city": "Oslo"}, {"output": "Ünïcödé ✓", "city": "Ünï"}]

# (engine, expression, threshold, statuses, scores)
CASES = [
    ("duckdb", "output LIKE '%' || city || '%'", None,
     ["pass", "fail", "error", "pass"], [1.0, 0.0, None, 1.0]),
    ("polars", "output LIKE '%Paris%'", None, ["pass", "fail", "error", "fail"],
     [1.0, 0.0, None, 0.0]),
    ("duckdb", "length(output) / 10", None, ["pass", "fail", "error", "pass"],
     [1.3, 0.0, None, 0.9]),
    ("duckdb", "length(output) / 10", 1.0, ["pass", "fail", "error", "fail"],
     [1.3, 0.0, None, 0.9]),
    ("polars", "length(output) / 10.0", 1.0, ["pass", "fail", "error", "fail"],
     [1.3, 0.0, None, 0.9]),
    ("duckdb", "coalesce(output, '') = ''", None, ["fail", "pass", "pass", "fail"],
     [0.0, 1.0, 1.0, 0.0]),
    ("duckdb", "vars.city = 'Rome'", None, ["fail", "pass", "fail", "fail"],
     [0.0, 1.0, 0.0, 0.0]),  # vars as a struct too
    ("duckdb", "lang = 'en'", None, ["pass"] * 4, [1.0] * 4),  # a test var
    ("duckdb", "no_such_column = 1", None, ["error"] * 4, [None] * 4),
    ("duckdb", "output", None, ["error"] * 4, [None] * 4),  # a string is neither bool nor number
]


@pytest.mark.parametrize("engine,expr,threshold,statuses,scores", CASES)
def test_expression(tmp_path, engine, expr, threshold, statuses, scores):
    a = {"type": "expression", "value": expr, "engine": engine}
    if threshold is not None:
        a["threshold"] = threshold
    got = results(tmp_path, a, ROWS, {"lang": "en"})
    assert [r["status"] for r in got] == statuses
    assert [r["score"] for r in got] == [None if s is None else pytest.approx(s, abs=1e-6)
                                        for s in scores]


def test_error_reason_names_the_problem(tmp_path):
    got = results(tmp_path, {"type": "expression", "value": "no_such_column = 1"}, ROWS[:1])
    assert got[0]["reason"].startswith("expression failed:") and "no_such_column" in got[0]["reason"]


def test_negation(tmp_path):
    got = results(tmp_path, {"type": "not-expression", "value": "length(output) > 3"},
                  [{"output": "abcd"}, {"output": "ab"}])
    assert [r["status"] for r in got] == ["fail", "pass"]


PARSE_ERRORS = [
    ({"value": "length(output) >"}, "invalid duckdb expression"),
    ({"value": "1; DROP TABLE cases"}, "invalid duckdb expression"),
    ({"value": "length(output) >", "engine": "polars"}, "invalid polars expression"),
    ({"value": "true", "engine": "pandas"}, 'engine must be "duckdb" or "polars"'),
    ({}, "needs `value`"),
]


@pytest.mark.parametrize("fields,message", PARSE_ERRORS)
def test_parse_time_errors(tmp_path, fields, message):
    suite = {"tests": [{"assert": [{"type": "expression", **fields}]}]}
    assert message in parse_problems(tmp_path, suite)


def test_batches_without_the_tests_rows_finish(tmp_path):
    """A dataset sorted by test, several batches per test: a batch holding no row of an
    assertion's test skips it (expression and @batch_check used to crash there)."""
    import polars as pl

    import checkllm_batch as cb

    (tmp_path / "checks.py").write_text(
        "from checkllm_batch import batch_check\n\n@batch_check\n"
        "def short(df):\n    return df['output'].str.len_chars() < 3\n", encoding="utf-8")
    suite = tmp_path / "s.yaml"
    suite.write_text(
        "tests:\n  - description: a\n    assert:\n"
        "      - {type: expression, value: 'length(output) > 2'}\n"
        "  - description: b\n    assert:\n      - {type: python, value: 'file://checks.py:short'}\n",
        encoding="utf-8")
    rows = pl.DataFrame({"test_id": ["a"] * 3 + ["b"] * 3,
                         "output": ["abcd", "x", "ünïcode", "x", "yyyy", ""]})
    got = cb.evaluate(suite, rows, batch_rows=2).assertion_results.sort("case_id")
    assert got["status"].to_list() == ["pass", "fail", "pass", "pass", "fail", "pass"]

"""Our test-level verdicts against promptfoo 0.123.1's: how assertions combine into a test.

Each row of tests/promptfoo_kit/combine/<area>.jsonl holds an output, a test (its asserts,
threshold, vars) and maybe a defaultTest, with the pass, score, reason and per-assertion
components promptfoo gave (recorded by record_tests.py, never from our output). Our test
result must have the same pass and score (to the last bit); its reason too where
promptfoo's is its own (a threshold, no assertions, all passed: a failing test's is one
assertion's, whose wording is each type's table's business); each component its pass and score, in
promptfoo's order (an assert-set followed by its members); and the named metrics (mean and
weight) unless a metric-only assertion feeds one (we count it with weight 1, promptfoo
with 0). A row with "differs" gives our
verdict in its "ours" field instead (the difference is in docs/assertions/README.md).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from conftest import run
from fixtures.promptfoo_kit import check_differences_say_why, params, table_rows

ROWS = table_rows(Path(__file__).parents[1] / "promptfoo_kit" / "combine")
OTHER = {"description": "other", "assert": [{"type": "contains", "value": "x"}]}


def ours(tmp_path: Path, row: dict) -> dict:
    """Our test result for the row's test (pass, score, reason, components)."""
    suite = {"tests": [{**row["test"], "description": "t"}, OTHER]}
    if "defaultTest" in row:
        suite["defaultTest"] = row["defaultTest"]
    try:
        r = run(tmp_path, suite, [{"output": row["output"], "test_id": "t"}])
    except Exception as exc:  # a suite promptfoo errors on may be refused at parse time
        return {"status": "error", "pass": None, "score": None, "reason": str(exc),
                "components": []}
    test = r.test_results.row(0, named=True)
    rows = r.assertion_results.with_columns(
        top=pl.coalesce("parent_index", "assertion_index"),
        member=pl.when(pl.col("parent_index").is_null()).then(-1).otherwise("assertion_index"))
    components = rows.sort("top", "member").select("pass", "score", "metric_only").rows()
    named = {m["metric"]: [m["sum"] / m["weight"] if m["weight"] else 0, m["weight"]]
             for m in r.named_metrics.to_dicts()}
    return {**{k: test[k] for k in ("status", "pass", "score", "reason")},
            "components": [list(c) for c in components], "named": named}


def check(got: dict, row: dict) -> None:
    want = row["ours"] if "differs" in row else row["promptfoo"]
    if want["pass"] is None:
        assert got["status"] == "error", got
        return
    # the score to the last bit: promptfoo's order of adding decides a threshold at the boundary
    assert (got["pass"], got["score"]) == (want["pass"], want["score"]), got
    if want["reason"].startswith(("Aggregate score", "No assertions", "All assertions passed")):
        assert got["reason"] == want["reason"], got
    assert len(got["components"]) == len(want["components"]), got
    for (p, s, metric_only), (wp, ws) in zip(got["components"], want["components"], strict=True):
        assert p == wp or metric_only, got  # a metric-only row keeps its own verdict
        assert s is None or ws is None or s == pytest.approx(ws), got
    if not any(metric_only for _, _, metric_only in got["components"]):  # ours: weight 1
        assert got["named"] == {k: [pytest.approx(v), pytest.approx(w)]
                                for k, (v, w) in want["named"].items()}, got


@pytest.mark.parametrize("row", params(ROWS))
def test_test_verdict_matches_promptfoo(tmp_path, row):
    check(ours(tmp_path, row), row)


def test_every_difference_says_why():
    check_differences_say_why(ROWS)

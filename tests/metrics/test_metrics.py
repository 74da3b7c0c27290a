"""Named metrics and derivedMetrics computed in DuckDB (metrics/named.py, metrics/derived.py)."""

import pytest
from conftest import ROOT, run

FSCORE = {
    "derivedMetrics": [
        {"name": "precision", "value": "true_positives / (true_positives + false_positives)"},
        {"name": "recall", "value": "true_positives / (true_positives + false_negatives)"},
        {"name": "f1", "value": "2 * true_positives / (2 * true_positives + false_positives "
                                "+ false_negatives)"},
        {"name": "f1_again", "value": "2 * precision * recall / (precision + recall)"},
        {"name": "share", "sql": "true_positives / NULLIF(__count, 0)"},
    ],
    "tests": [
        {"description": "pos", "assert": [
            {"type": "equals", "value": "positive", "metric": "true_positives", "weight": 0},
            {"type": "not-equals", "value": "positive", "metric": "false_negatives", "weight": 0}]},
        {"description": "neg", "assert": [
            {"type": "equals", "value": "positive", "metric": "false_positives", "weight": 0}]},
    ],
}


def derived(r) -> dict:
    return {(row["provider"], row["name"]): row["value"] for row in r.derived_metrics.to_dicts()}


def test_fscore_recipe_per_provider(tmp_path):
    rows = [("a", "pos", "positive"), ("a", "pos", "positive"), ("a", "pos", "negative"),
            ("a", "neg", "positive"), ("a", "neg", "negative"),
            ("b", "pos", "negative"), ("b", "neg", "negative")]
    r = run(tmp_path, FSCORE, [{"provider": p, "test_id": t, "output": o} for p, t, o in rows])
    d = derived(r)
    # provider a: tp=2, fn=1, fp=1
    assert d[("a", "precision")] == pytest.approx(2 / 3)
    assert d[("a", "recall")] == pytest.approx(2 / 3)
    assert d[("a", "f1")] == pytest.approx(2 / 3)
    assert d[("a", "f1_again")] == pytest.approx(2 / 3)
    assert d[("a", "share")] == pytest.approx(2 / 5)
    # provider b: tp=0, fp=0, fn=1 -> precision 0/0 is NULL, recall 0
    assert d[("b", "precision")] is None
    assert d[("b", "recall")] == 0.0
    assert d[("b", "f1_again")] is None  # depends on a NULL
    assert set(r.test_results["status"]) == {"pass"}  # counters never fail a test


def test_bundled_example_has_precision_recall_f1():
    import checkllm_batch as cb

    r = cb.evaluate(ROOT / "data" / "suite.yaml", ROOT / "data" / "outputs.jsonl")
    names = set(r.derived_metrics["name"])
    assert {"precision", "recall", "f1"} <= names
    assert r.cases.height == 360 and r.test_results.height == 360
    best = r.derived_metrics.filter(name="f1").sort("value")["provider"][-1]
    assert best == "openai:gpt-4o-mini"


def test_derived_operators_translate_to_sql():
    from checkllm_batch.suites.derived import to_sql

    names = {"a", "b"}
    assert to_sql("a ^ 2 + max(a, b) / log(b)", names) == '"a" ^ 2 + greatest ( "a" , "b" ) / ln ( "b" )'
    with pytest.raises(ValueError, match="CASE WHEN"):
        to_sql("a > b ? a : b", names)
    with pytest.raises(ValueError, match='unknown name "c"'):
        to_sql("a + c", names)


def test_named_metric_sums_per_provider_and_prompt(tmp_path):
    suite = {"defaultTest": {"assert": [{"type": "contains", "value": "x", "metric": "has_x"}]}}
    rows = [{"provider": "p", "prompt": "A", "output": "x"}, {"provider": "p", "prompt": "B",
                                                              "output": "y"},
            {"provider": "p", "prompt": "A", "output": "xx"}]
    m = {(r["prompt"]): (r["sum"], r["weight"], r["count"]) for r in run(tmp_path, suite, rows)
         .named_metrics.to_dicts()}
    assert m == {"A": (2.0, 2.0, 2), "B": (0.0, 1.0, 1)}


def test_named_metrics_add_as_promptfoo_adds_them(tmp_path):
    """promptfoo 0.123.1 (tests/promptfoo_kit/combine/hand.jsonl): a set member counts with
    its weight times the set's, and not under the set's own metric; an erroring test (here a
    `cost` check without a cost column) feeds no metric."""
    members = [{"type": "contains", "value": "x", "metric": "m", "weight": 2},
               {"type": "contains", "value": "y", "metric": "m"},
               {"type": "contains", "value": "x", "metric": "s"}]
    suite = {"tests": [
        {"description": "set", "assert": [
            {"type": "assert-set", "metric": "s", "weight": 3, "assert": members}]},
        {"description": "error", "assert": [{"type": "contains", "value": "x", "metric": "m"},
                                            {"type": "cost", "threshold": 1}]}]}
    rows = [{"test_id": "set", "output": "x"}, {"test_id": "error", "output": "x"}]
    m = {r["metric"]: (r["sum"], r["weight"]) for r in run(tmp_path, suite, rows)
         .named_metrics.to_dicts()}
    assert m == {"m": (2 * 3, 3 * 3), "s": (pytest.approx(3 * 3 / 4), 3)}

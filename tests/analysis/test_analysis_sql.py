"""Views, table macros and the catalog of the results database (store/views.py)."""

from __future__ import annotations

import math

import duckdb
import pytest

from checkllm_batch.analysis import Results
from checkllm_batch.store import schema
from checkllm_batch.store.runs import connect
from checkllm_batch.store.views import MACROS, VIEWS, create_views


def test_every_view_and_macro_is_listed_with_a_description(two_runs):
    db, *_ = two_runs
    listed = {name: (kind, text) for name, kind, text in Results(db).catalog().iter_rows()}
    for name in [*VIEWS, "judge_costs"]:
        assert listed[name][0] == "view" and listed[name][1]
    for name in MACROS:
        assert listed[name][0] == "macro" and listed[name][1]
    for name in ("runs", "case_rows", "case_sources", "assertion_results", "test_results",
                 "named_metrics"):
        assert listed[name][0] == "table" and listed[name][1]
    assert listed["cases"][0] == "view" and listed["cases"][1]  # text from the source file


PASS_RATES = [  # (provider, cases, passed, failed, errors) in run A
    ("gpt-bad", 6, 3, 3, 0),
    ("gpt-good", 6, 6, 0, 0),
    ("local", 6, 4, 2, 0),
]


@pytest.mark.parametrize("provider, cases, passed, failed, errors", PASS_RATES)
def test_pass_rates_per_provider(two_runs, provider, cases, passed, failed, errors):
    db, run_a, _ = two_runs
    row = Results(db).pass_rates(run_a).filter(provider=provider).row(0, named=True)
    assert (row["cases"], row["passed"], row["failed"], row["errors"]) == (
        cases, passed, failed, errors)
    assert row["pass_rate"] == pytest.approx(passed / cases)


def test_failures_have_reasons_and_leave_out_metric_only_counters(two_runs):
    db, run_a, _ = two_runs
    failures = Results(db).failures(run_a)
    assert failures.height == 5  # gpt-bad t2 t3 t5, local t4, local t5 (null output)
    assert set(failures["metric"]) == {"accuracy"}
    assert failures["reason"].null_count() == 0
    assert "output is null" in failures.filter(test_id="t5", provider="local")["reason"][0]


METRICS = [  # (provider, metric, kind, value) in run A
    ("gpt-good", "f1", "derived", 1.0),
    ("gpt-bad", "precision", "derived", 0.5),
    ("gpt-bad", "recall", "derived", 1 / 3),
    ("local", "f1", "derived", 0.8),
    ("local", "accuracy", "named", 4 / 6),
]


@pytest.mark.parametrize("provider, metric, kind, value", METRICS)
def test_metric_summary(two_runs, provider, metric, kind, value):
    db, run_a, _ = two_runs
    rows = Results(db).metrics(run_a).filter(provider=provider, metric=metric)
    assert rows["kind"].to_list() == [kind]
    assert rows["value"][0] == pytest.approx(value)


@pytest.mark.parametrize("provider, tp, fp, fn, f1", [
    ("gpt-good", 3, 0, 0, 1.0), ("gpt-bad", 1, 1, 2, 0.4), ("local", 2, 1, 0, 0.8)])
def test_fscore_macro_from_counter_metrics_matches_derived(two_runs, provider, tp, fp, fn, f1):
    db, run_a, _ = two_runs
    row = Results(db).fscore("tp", "fp", "fn", run=run_a).filter(provider=provider).row(
        0, named=True)
    assert (row["tp"], row["fp"], row["fn"]) == (tp, fp, fn)
    assert row["f1"] == pytest.approx(f1)


def test_score_distribution_counts_every_scored_result(two_runs):
    db, run_a, _ = two_runs
    res = Results(db)
    scored = res.results(run_a).filter(res.results(run_a)["score"].is_not_null()).height
    assert res.scores(run_a)["results"].sum() == scored


# Classification from labels: (provider, class, precision, recall, f1), hand-computed.
# p1: gold a a b b c, predicted a b b b "A " (normalised to a); p2: gold é é (and one row
# with no gold label, left out), predicted "É" and a missing prediction.
CLASSIFICATION = [
    ("p1", "a", 0.5, 0.5, 0.5),
    ("p1", "b", 2 / 3, 1.0, 0.8),
    ("p1", "c", None, 0.0, 0.0),
    ("p1", "macro avg", (0.5 + 2 / 3 + 0) / 3, 0.5, (0.5 + 0.8) / 3),
    ("p1", "micro avg", 0.6, 0.6, 0.6),
    ("p2", "é", 1.0, 0.5, 2 / 3),
    ("p2", "micro avg", 1.0, 0.5, 2 / 3),
]


@pytest.fixture()
def labelled(labelled_run):
    run = labelled_run(provider=["p1"] * 5 + ["p2"] * 3,
                        output=["a", "b", "b", "b", "A ", "É", None, "x"],
                        label=["a", "a", "b", "b", "c", "é", "é", None])
    return Results(run.con)


def _approx(value):
    return None if value is None else pytest.approx(value)


@pytest.mark.parametrize("provider, label, precision, recall, f1", CLASSIFICATION)
def test_classification_report_from_labels(labelled, provider, label, precision, recall, f1):
    report = labelled.classification("label").per_class
    row = report.filter(provider=provider, **{"class": label}).row(0, named=True)
    assert (row["precision"], row["recall"], row["f1"]) == (
        _approx(precision), _approx(recall), _approx(f1))


def test_confusion_matrix_and_summary(labelled):
    result = labelled.classification("label")
    matrix = result.matrix("p1")
    assert matrix.columns == ["actual", "a", "b", "c"]
    assert matrix.rows() == [("a", 1, 1, 0), ("b", 0, 2, 0), ("c", 1, 0, 0)]
    assert result.matrix("p2").rows() == [("é", 1, 1)]  # columns é, (none)
    summary = result.summary.filter(provider="p1").row(0, named=True)
    assert summary["cases"] == 5 and summary["accuracy"] == pytest.approx(0.6)
    assert summary["macro_f1"] == pytest.approx(1.3 / 3)
    assert "<rect" in result.heatmap("p1")


def test_labels_without_normalising_keep_case_and_spaces(labelled):
    report = labelled.classification("label", normalize=False).per_class
    assert "A " in report.filter(provider="p1")["class"].to_list()


def test_predicted_label_from_a_json_field(labelled_run):
    run = labelled_run(provider=["p"] * 3, label=["yes", "no", "no"],
                        output=['{"label": "yes", "why": "…"}', '{"label": "yes"}', "not json"])
    row = Results(run.con).classification("label", "$.label").summary.row(0, named=True)
    assert row["accuracy"] == pytest.approx(1 / 3)


def test_unknown_gold_var_gives_an_empty_report(labelled):
    assert labelled.classification("nope").per_class.is_empty()


def test_judge_costs_is_empty_without_a_judge_calls_table(two_runs):
    db, run_a, _ = two_runs
    costs = Results(db).judge_costs(run_a)
    assert costs.is_empty() and costs.columns == ["model", "calls", "errors", "cost", "tokens"]


def test_judge_costs_reads_judge_calls_added_by_a_later_migration(tmp_path, monkeypatch):
    db = tmp_path / "r.duckdb"
    judge = [m for m in schema.MIGRATIONS if m[0] == "0004_judge_calls"]
    assert judge, "the judge's migration adds judge_calls"
    before = [m for m in schema.MIGRATIONS if m not in judge]
    monkeypatch.setattr(schema, "MIGRATIONS", before)
    connect(db).close()  # a database made before the judge existed
    monkeypatch.setattr(schema, "MIGRATIONS", [*before, *judge, ("9999_judge_rows", """
        INSERT INTO judge_calls (run_id, model, status, cost, prompt_tokens, completion_tokens)
        VALUES ('r1', 'm1', 'ok', 0.5, 10, 5),
            ('r1', 'm1', 'error', NULL, NULL, NULL), ('r1', 'm2', 'ok', 0.25, 1, 1),
            ('r2', 'm1', 'ok', 1, 1, 1)""")])
    con = connect(db)
    rows = con.execute("SELECT model, calls, errors, cost, tokens FROM judge_costs "
                       "WHERE run_id = 'r1' ORDER BY model").fetchall()
    assert rows == [("m1", 2, 1, 0.5, 15), ("m2", 1, 0, 0.25, 2)]


def test_views_survive_a_database_reopened(two_runs):
    db, *_ = two_runs
    con = duckdb.connect(str(db))
    create_views(con)  # idempotent
    assert con.execute("SELECT COUNT(*) FROM pass_rates").fetchone()[0] == 6
    con.close()


def test_division_by_zero_is_null_not_an_error(labelled_run):
    run = labelled_run(provider=[None], output=["z"], label=["a"])
    report = Results(run.con).classification("label").per_class
    row = report.filter(**{"class": "z"}).row(0, named=True)  # predicted, never gold
    assert row["recall"] is None and row["precision"] == 0.0
    assert not any(isinstance(v, float) and math.isnan(v) for v in row.values())


@pytest.mark.parametrize("provider, assertion_type, metric_only, results, passed", [
    ("gpt-good", "equals", False, 6, 6),     # the accuracy check
    ("gpt-good", "equals", True, 6, 3),      # tp / fp counters: 3 true positives
    ("gpt-bad", "not-equals", True, 3, 2),   # fn counter
    ("local", "equals", False, 6, 4),
])
def test_pass_rates_by_type_keep_metric_only_counters_apart(
        two_runs, provider, assertion_type, metric_only, results, passed):
    db, run_a, _ = two_runs
    row = Results(db).pass_rates(run_a, by="type").filter(
        provider=provider, type=assertion_type, metric_only=metric_only).row(0, named=True)
    assert (row["results"], row["passed"]) == (results, passed)

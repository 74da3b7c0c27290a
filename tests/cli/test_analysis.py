"""The analysis commands: compare, export, report, sql --list; bad input exits 2 in one line."""

from __future__ import annotations

import polars as pl
import pytest
from click.testing import CliRunner

import checkllm_batch as cb
from checkllm_batch.analysis import Results
from checkllm_batch.cli import main


def invoke(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_compare_lists_regressed_and_improved_cases(two_runs):
    """One case of six regressed: noise to the default gate (exit 0), a failure to
    `--gate any` (exit 1, the rule before issue 32)."""
    db, run_a, run_b = two_runs
    result = invoke("compare", "--db", db, run_a, run_b)
    assert result.exit_code == 0, result.output
    assert "1 regressed, 2 improved, 15 unchanged, 0 added, 0 removed" in result.output
    assert "Expected output to equal \"spam\"" in result.output  # the regression's reason
    assert "gpt-good 100.0 % → 83.3 %, −16.7 points [" in result.output
    assert "pass rates" in result.output and "f1" in result.output
    assert invoke("compare", "--db", db, run_a, run_b, "--gate", "any").exit_code == 1


def test_compare_gate_any_exits_0_when_nothing_regressed(two_runs):
    db, run_a, run_b = two_runs
    result = invoke("compare", "--db", db, run_b, run_a, "--gate", "any")  # 2 regress
    assert result.exit_code == 1
    same = invoke("compare", "--db", db, run_a, run_a, "--gate", "any")
    assert same.exit_code == 0 and "0 regressed, 0 improved, 18 unchanged" in same.output


RUN_NAMES = [  # (a, b) as typed, (a, b) meant: two_runs holds runs A then B
    (("previous", "last"), ("a", "b")),
    (("last", "previous"), ("b", "a")),
    (("{a8}", "{b}"), ("a", "b")),  # a unique prefix
    (("previous", "latest"), ("a", "b")),
]


@pytest.mark.parametrize("typed, meant", RUN_NAMES)
def test_compare_takes_last_previous_and_prefixes(two_runs, typed, meant):
    db, run_a, run_b = two_runs
    ids = {"a": run_a, "b": run_b}
    args = [t.format(a8=run_a[:-3], b=run_b) for t in typed]
    result = invoke("compare", "--db", db, *args)
    assert result.output.startswith(f"{ids[meant[0]]} -> {ids[meant[1]]}:"), result.output


def test_compare_previous_needs_two_runs(tmp_path, label_suite):
    db = tmp_path / "one.duckdb"
    cb.evaluate(label_suite, pl.DataFrame({"output": ["x"], "label": ["x"]}), db=db).con.close()
    result = invoke("compare", "--db", db, "previous", "last")
    assert result.exit_code == 2 and "no 'previous' run: the database has 1 finished run(s)" in result.output


def test_compare_by_case_identity_not_row_order(tmp_path):
    """Rows reordered and one provider dropped: cases still line up; dropped ones are
    'removed', not regressions; a repeated key is matched by its order of occurrence."""
    suite = tmp_path / "s.yaml"
    suite.write_text('defaultTest:\n  assert:\n    - type: equals\n      value: "{{label}}"\n')
    a = pl.DataFrame({"provider": ["p", "p", "p", "q", None],
                      "label": ["x", "x", "ü", "x", "x"],
                      "output": ["x", "no", "ü", "x", "x"]})
    b = pl.DataFrame({"provider": ["p", None, "p", "p"], "label": ["ü", "x", "x", "x"],
                      "output": ["ü", "x", "x", "x"]})
    db = tmp_path / "r.duckdb"
    run_a = cb.evaluate(suite, a, db=db).run_id
    run_b = cb.evaluate(suite, b, db=db).run_id
    comparison = Results(db).compare(run_a, run_b)
    assert comparison.counts() == {"regressed": 0, "improved": 1, "unchanged": 3, "added": 0,
                                   "removed": 1}
    assert comparison.improved["occurrence"].to_list() == [2]
    assert invoke("compare", "--db", db, run_a, run_b).exit_code == 0


def test_export_writes_one_parquet_file_per_table_with_the_run_only(two_runs, tmp_path):
    db, run_a, _ = two_runs
    result = invoke("export", "--db", db, "--run", run_a, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    cases = pl.read_parquet(tmp_path / "out" / "cases.parquet")
    assert cases.height == 18 and set(cases["run_id"]) == {run_a}
    results = pl.read_parquet(tmp_path / "out" / "assertion_results.parquet")
    assert results.height == Results(db).results(run_a).height
    assert (tmp_path / "out" / "derived_metrics.parquet").exists()


def test_sql_list_names_views_with_descriptions(two_runs):
    db, *_ = two_runs
    result = invoke("sql", "--db", db, "--list")
    assert result.exit_code == 0
    lines = {line.split()[0]: line for line in result.output.splitlines()}
    for name in ("pass_rates", "failures", "metric_summary", "judge_costs",
                 "score_distribution", "classification_report", "confusion_matrix", "fscore"):
        assert len(lines[name].split()) > 3, lines[name]


def test_sql_macro_from_the_command_line(two_runs):
    db, *_ = two_runs
    result = invoke("sql", "--db", db, "SELECT class, f1 FROM classification_report('label') "
                    "WHERE provider = 'gpt-good' AND class = 'micro avg'")
    assert result.exit_code == 0 and "micro avg" in result.output


def test_report_writes_a_self_contained_html_file(two_runs, tmp_path):
    db, run_a, _ = two_runs
    path = tmp_path / "report.html"
    result = invoke("report", "--db", db, "--run", run_a, "-o", path)
    assert result.exit_code == 0, result.output
    html = path.read_text()
    assert "<script src" not in html and "https://" not in html and "<link" not in html
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert html.count('<figure class="chart"') >= 1 + 7 + 1 + 2  # pass rate, metrics, types, scores
    # by hand: gpt-bad fails t2, t3, t5; local fails t4, t5 (null output)
    assert ("4 of 6 tests have a failed or errored case (18 cases: 5 failed, 0 errors, "
            "0 skipped)") in html
    assert "output is null" in html  # a reason, in the matrix's data
    assert "no judge calls recorded" in html


def test_report_of_a_large_run_stays_small_and_says_how_to_see_the_rest(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text('defaultTest:\n  assert:\n    - type: equals\n      value: "{{label}}"\n')
    n = 20_000
    frame = pl.DataFrame({"label": [f"l{i % 7}" for i in range(n)],
                          "text": [f"input {i} ✓ " + "x" * 200 for i in range(n)],
                          "output": [f"l{i % 5}" for i in range(n)]})
    db = tmp_path / "r.duckdb"
    run = cb.evaluate(suite, frame, db=db)
    html = Results(run.con).report(tmp_path / "r.html").read_text(encoding="utf-8")
    assert len(html.encode()) < 1_500_000
    assert "The matrix holds 300 of them" in html
    assert f"checkllm-batch sql --db {db}" in html and run.run_id in html


def test_report_escapes_outputs(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text("defaultTest:\n  assert:\n    - type: contains\n      value: ok\n")
    db = tmp_path / "r.duckdb"
    cb.evaluate(suite, pl.DataFrame({"output": ["<img src=x onerror=alert(1)>", "ok", "", None]}),
                db=db)
    html = Results(db).report(tmp_path / "r.html").read_text()
    assert "<img" not in html and "\\u003cimg src=x" in html  # only inside the JSON data


BAD_INPUT = [  # (args, words in the one-line message); {db} is a real database
    (["sql", "--db", "{missing}", "--list"], "not found"),
    (["compare", "--db", "{missing}", "a", "b"], "not found"),
    (["report", "--db", "{missing}"], "not found"),
    (["export", "--db", "{missing}", "-o", "{tmp}/x"], "not found"),
    (["compare", "--db", "{db}", "{run}", "no-such-run"], "no run 'no-such-run'"),
    (["report", "--db", "{db}", "--run", "nöpe", "-o", "{tmp}/r.html"], "no run 'nöpe'"),
    (["export", "--db", "{db}", "--run", "", "-o", "{tmp}/x"], "matches 2 runs"),
    (["sql", "--db", "{db}", "SELECT * FROM no_such_view"], "query failed"),
    (["sql", "--db", "{db}", "SELECT FROM WHERE"], "query failed"),
    (["sql", "--db", "{db}", "SELECT CAST(output AS INTEGER) FROM cases"], "query failed"),
    (["sql", "--db", "{text}", "--list"], "exists and is not a DuckDB database"),
    (["report", "--db", "{db}", "-o", "{tmp}/no/such/dir/r.html"], "cannot write"),
]


@pytest.mark.parametrize("args, message", BAD_INPUT)
def test_bad_input_is_one_line_and_exit_2(two_runs, tmp_path, args, message):
    db, run_a, _ = two_runs
    text = tmp_path / "not-a-db.duckdb"
    text.write_text("hello")
    values = {"db": db, "run": run_a, "missing": tmp_path / "missing.duckdb", "tmp": tmp_path,
              "text": text}
    result = invoke(*(a.format(**values) for a in args))
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output


# compare refuses what it cannot compare, and matches vars as values (issue 40)

def test_compare_refuses_runs_of_different_suites_naming_the_difference(tmp_path):
    suite = tmp_path / "s.yaml"
    rows = pl.DataFrame({"label": ["x", "y"], "output": ["x", "n"]})
    db = tmp_path / "r.duckdb"
    suite.write_text('defaultTest:\n  assert:\n    - type: equals\n      value: "{{label}}"\n')
    run_a = cb.evaluate(suite, rows, db=db).run_id
    suite.write_text('defaultTest:\n  assert:\n    - type: contains\n      value: "{{label}}"\n')
    run_b = cb.evaluate(suite, rows, db=db).run_id
    with pytest.raises(cb.InputError, match=rf"runs {run_a} \(A\) and {run_b} \(B\) ran "
                                            "different suites .*type .equals. in A, .contains. in B"):
        Results(db).compare(run_a, run_b)
    result = invoke("compare", "--db", db, run_a, run_b)
    assert result.exit_code == 2 and "ran different suites" in result.output
    assert "Traceback" not in result.output and "%" not in result.output


def test_compare_refuses_runs_with_no_case_in_common_and_warns_under_half(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text('defaultTest:\n  assert:\n    - type: equals\n      value: "{{label}}"\n')
    db = tmp_path / "r.duckdb"
    a = cb.evaluate(suite, pl.DataFrame({"label": ["x", "y", "z"], "output": ["x"] * 3}),
                    db=db).run_id
    b = cb.evaluate(suite, pl.DataFrame({"label": ["u", "v"], "output": ["u", "u"]}),
                    db=db).run_id
    c = cb.evaluate(suite, pl.DataFrame({"label": ["x", "v", "w"], "output": ["x"] * 3}),
                    db=db).run_id
    with pytest.raises(cb.InputError, match=f"runs {a} and {b} have no case in common"):
        Results(db).compare(a, b)
    result = invoke("compare", "--db", db, a, b)
    assert result.exit_code == 2 and "no case in common" in result.output
    with pytest.warns(UserWarning, match=f"runs {a} and {c} have 1 of 3 cases in common"):
        assert Results(db).compare(a, c).counts()["unchanged"] == 1


def test_a_frame_and_a_file_of_the_same_rows_match_case_for_case(tmp_path):
    """A JSON row without a key and a frame's null are the same var; columns in another
    order are the same vars."""
    suite = tmp_path / "s.yaml"
    suite.write_text('defaultTest:\n  assert:\n    - type: icontains\n      value: "{{want}}"\n')
    rows = [{"output": "a b", "want": "a", "ctx": "ünï"}, {"output": "b", "want": "b"},
            {"output": "", "want": "c", "n": 3}, {"output": "d", "want": None, "ctx": None}]
    file = tmp_path / "o.jsonl"
    file.write_text("\n".join(__import__("json").dumps(r) for r in rows), encoding="utf-8")
    frame = pl.DataFrame(rows).select("n", "ctx", "want", "output")
    db = tmp_path / "r.duckdb"
    run_a = cb.evaluate(suite, str(file), db=db).run_id
    run_b = cb.evaluate(suite, frame, db=db).run_id
    assert Results(db).compare(run_a, run_b).counts() == {
        "regressed": 0, "improved": 0, "unchanged": 4, "added": 0, "removed": 0}

"""The flags a promptfoo user types: -c, -o (the results file), -j, --filter-*, --no-cache,
-h, compare last / previous, and --format json|csv for scripts."""

from __future__ import annotations

import json

import duckdb
import polars as pl
import pytest
from click.testing import CliRunner
from conftest import ROOT, write_suite
from judge_server import JudgeServer

from checkllm_batch.cli import main

SUITE = {"tests": [{"description": "capital", "assert": [{"type": "contains", "value": "Paris"}]},
                   {"description": "math", "assert": [{"type": "equals", "value": "4"}]},
                   {"description": "ünïcode", "assert": [{"type": "contains", "value": "é"}]}]}
ROWS = [{"test_id": "capital", "provider": "a", "output": "Paris!"},
        {"test_id": "math", "provider": "a", "output": "4"},
        {"test_id": "math", "provider": "b", "output": "5"},
        {"test_id": "ünïcode", "provider": "b", "output": None},
        {"test_id": "capital", "provider": "b", "output": ""}]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def files(tmp_path):
    outs = tmp_path / "outputs.jsonl"
    outs.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return write_suite(tmp_path, SUITE), outs, tmp_path / "r.duckdb"


def cases(db) -> list[tuple]:
    con = duckdb.connect(str(db))
    rows = con.execute("SELECT test_id, provider FROM cases ORDER BY case_id").fetchall()
    con.close()
    return rows


@pytest.mark.parametrize("args", [["-h"], ["eval", "-h"], ["sql", "-h"], ["compare", "-h"]])
def test_dash_h_is_help(args):
    result = invoke(*args)
    assert result.exit_code == 0 and "Usage:" in result.output


def test_dash_c_names_the_suite(files):
    suite, outs, db = files
    assert invoke("eval", "-c", suite, "--outputs", outs, "--db", db).exit_code == 1
    assert len(cases(db)) == len(ROWS)


CASES_SUITE_ARGS = [  # (args, message)
    ([], "no suite"),
    (["{suite}", "-c", "{other}"], "two suites"),
]


@pytest.mark.parametrize("args, message", CASES_SUITE_ARGS)
def test_suite_given_once(files, tmp_path, args, message):
    suite, outs, db = files
    args = [a.format(suite=suite, other=tmp_path / "other.yaml") for a in args]
    result = invoke("eval", *args, "--outputs", outs, "--db", db)
    assert result.exit_code == 2 and message in result.output


FORMATS = [".json", ".jsonl", ".csv", ".parquet", ".html"]


@pytest.mark.parametrize("suffix", FORMATS)
def test_dash_o_writes_the_results_file(files, tmp_path, suffix):
    suite, outs, db = files
    path = tmp_path / f"results{suffix}"
    result = invoke("eval", suite, "--outputs", outs, "-o", path, "--db", db)
    assert result.exit_code == 1, result.output
    if suffix == ".json":
        rows = json.loads(path.read_text())["results"]
    elif suffix == ".jsonl":
        rows = [json.loads(line) for line in path.read_text().splitlines()]
    elif suffix == ".csv":
        rows = pl.read_csv(path).to_dicts()
    elif suffix == ".parquet":
        rows = pl.read_parquet(path).to_dicts()
    else:
        assert "ünïcode" in path.read_text(encoding="utf-8")
        return
    assert [r["status"] for r in rows] == ["pass", "pass", "fail", "fail", "fail"]
    assert [r["output"] for r in rows] == [r["output"] for r in ROWS]


def test_dash_o_in_its_old_meaning_is_refused_and_the_file_kept(files):
    suite, outs, db = files
    before = outs.read_text()
    result = invoke("eval", suite, "-o", outs, "--db", db)
    assert result.exit_code == 2
    assert "-o/--output names the results file to write" in result.output
    assert "--outputs" in result.output
    assert outs.read_text() == before


def test_dash_o_never_replaces_a_dataset_of_outputs(tmp_path, files):
    _, outs, db = files
    inline = write_suite(tmp_path, {"tests": [{"description": "d", "providerOutput": "hi ✓",
                                               "assert": [{"type": "contains", "value": "hi"}]}]},
                         name="inline.yaml")
    before = outs.read_text()
    result = invoke("eval", inline, "-o", outs, "--db", db)
    assert result.exit_code == 2 and "holds outputs to score" in result.output
    assert outs.read_text() == before
    damaged = tmp_path / "damaged.jsonl"  # a dataset is a dataset from its first line on
    damaged.write_text('{"output": "hi"}\n{"output": \n')
    result = invoke("eval", inline, "-o", damaged, "--db", db)
    assert result.exit_code == 2 and "holds outputs to score" in result.output
    assert damaged.read_text() == '{"output": "hi"}\n{"output": \n'
    results = tmp_path / "results.jsonl"  # our own results file may be written again
    for _ in range(2):
        assert invoke("eval", inline, "-o", results, "--db", db).exit_code == 0


def test_dash_o_cannot_overwrite_the_outputs(files):
    suite, outs, db = files
    result = invoke("eval", suite, "--outputs", outs, "-o", outs, "--db", db)
    assert result.exit_code == 2 and "is the outputs file" in result.output


SUITE_INPUTS = [
    # (files besides the suite, the suite's text, the input -o names, as the error calls it)
    ({}, json.dumps(SUITE), "suite.json", "the suite"),
    ({"cases.csv": "description,__expected\ncapital,contains:Paris\n"},
     "tests: file://cases.csv\n", "cases.csv", "a file the suite reads"),
    ({"cases.jsonl": '{"description": "ünïcode", "assert": [{"type": "equals", "value": ""}]}\n'},
     "tests: [file://cases.jsonl]\n", "./sub/../cases.jsonl", "a file the suite reads"),
    ({"cases.yaml": "- {description: math, assert: [{type: equals, value: '4'}]}\n"},
     "tests: file://cases.yaml\n", "link.yaml", "a file the suite reads"),
    ({"default.yaml": "assert: [{type: contains, value: a}]\n"},
     "defaultTest: file://default.yaml\n", "default.yaml", "a file the suite reads"),
    ({"schema.json": '{"type": "object"}'},
     "tests:\n  - assert: [{type: is-json, value: file://schema.json}]\n", "schema.json",
     "a file the suite reads"),
    ({"checks.py": "def ok(output, context):\n    return True\n"},
     "tests:\n  - assert: [{type: python, value: 'file://checks.py:ok'}]\n", "checks.py",
     "a file the suite reads"),
]


@pytest.mark.parametrize("inputs,suite,target,what", SUITE_INPUTS)
def test_dash_o_cannot_overwrite_what_the_suite_reads(files, tmp_path, monkeypatch, inputs,
                                                      suite, target, what):
    _, outs, db = files
    for name, text in inputs.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.yaml").symlink_to(tmp_path / "cases.yaml")
    path = tmp_path / ("suite.json" if target == "suite.json" else "suite.yaml")
    path.write_text(suite, encoding="utf-8")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    monkeypatch.chdir(tmp_path)
    result = invoke("eval", path, "--outputs", outs, "-o", target, "--db", db)
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.exception
    assert result.stderr == (f"Error: -o {target} is {what}: -o writes the results, give it "
                             "another name\n")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before


@pytest.mark.parametrize("name, message", [
    ("r.xlsx", "unknown results format '.xlsx'"),
    ("missing/r.json", "cannot write:"),
])
def test_a_results_file_that_cannot_be_written_is_refused_before_the_run(files, tmp_path, name,
                                                                          message):
    suite, outs, db = files
    result = invoke("eval", suite, "--outputs", outs, "-o", tmp_path / name, "--db", db)
    assert result.exit_code == 2 and message in result.output
    assert not db.exists()  # no run scored first


FILTERS = [  # (flags, cases kept: (test_id, provider))
    (["--filter-pattern", "^cap"], [("capital", "a"), ("capital", "b")]),
    (["--filter-pattern", "ïc"], [("ünïcode", "b")]),
    (["--filter-first-n", "2"], [("capital", "a"), ("math", "a")]),
    (["--filter-pattern", "math|capital", "--filter-first-n", "3"],
     [("capital", "a"), ("math", "a"), ("math", "b")]),
]


@pytest.mark.parametrize("flags, kept", FILTERS)
def test_filters_keep_the_cases_promptfoo_would(files, flags, kept):
    suite, outs, db = files
    result = invoke("eval", suite, "--outputs", outs, "--db", db, "--batch-rows", 2, *flags)
    assert result.exit_code in (0, 1), result.output
    assert cases(db) == kept


def test_filter_sample_draws_distinct_rows(files):
    suite, outs, db = files
    result = invoke("eval", suite, "--outputs", outs, "--db", db, "--batch-rows", 2,
                    "--filter-sample", 3)
    assert result.exit_code in (0, 1), result.output
    kept = cases(db)
    all_cases = [(r["test_id"], r["provider"]) for r in ROWS]
    assert len(kept) == 3 and len(set(kept)) == 3 and set(kept) <= set(all_cases)
    assert kept == [c for c in all_cases if c in kept]  # in their order


def test_filter_sample_does_not_depend_on_the_batch_size(files, tmp_path):
    """--batch-rows is a memory setting: the same seed draws the same sample at any size."""
    suite, outs, _ = files
    samples = []
    for rows in (1, 2, 1000):
        db = tmp_path / f"sample{rows}.duckdb"
        result = invoke("eval", suite, "--outputs", outs, "--db", db, "--batch-rows", rows,
                        "--filter-sample", 3)
        assert result.exit_code in (0, 1), result.output
        samples.append(cases(db))
    assert samples[0] == samples[1] == samples[2]


FILTER_ERRORS = [
    (["--filter-pattern", "("], "--filter-pattern '('"),
    (["--filter-pattern", "nothing-matches"], "keep no case"),
    (["--filter-first-n", "-1"], "-1 is not in the range"),
]


@pytest.mark.parametrize("flags, message", FILTER_ERRORS)
def test_filter_errors(files, flags, message):
    suite, outs, db = files
    result = invoke("eval", suite, "--outputs", outs, "--db", db, *flags)
    assert result.exit_code == 2 and message in result.output, result.output


def test_format_json_and_csv_on_eval_and_metrics(files):
    suite, outs, db = files
    result = invoke("eval", suite, "--outputs", outs, "--db", db, "--format", "json",
                    "--no-progress")
    document = json.loads(result.stdout)
    assert (document["cases"], document["pass"], document["fail"]) == (5, 2, 3)
    assert {r["provider"] for r in document["summary"]} == {"a", "b"}
    csv = invoke("eval", suite, "--outputs", outs, "--db", db, "--format", "csv").stdout
    assert csv.splitlines()[0].startswith("provider,cases,pass,fail,error,pass_rate")
    metrics = json.loads(invoke("metrics", "--db", db, "--format", "json").stdout)
    assert metrics["run_id"] != document["run_id"]  # the last run: the csv one
    previous = json.loads(invoke("metrics", "--db", db, "--run", "previous",
                                 "--format", "json").stdout)
    assert previous["run_id"] == document["run_id"]


def test_sql_formats_and_cuts(files):
    suite, outs, db = files
    invoke("eval", suite, "--outputs", outs, "--db", db)
    query = "SELECT range AS n, 'é' AS s FROM range(150)"
    result = invoke("sql", "--db", db, query)
    assert "showing 100 of 150 rows" in result.stderr and "--max-rows 0" in result.stderr
    result = invoke("sql", "--db", db, "--max-rows", 0, query)
    assert "149" in result.stdout and result.stderr == ""
    assert len(invoke("sql", "--db", db, "--format", "csv", query).stdout.splitlines()) == 151
    rows = json.loads(invoke("sql", "--db", db, "--format", "json", query).stdout)
    assert len(rows) == 150 and rows[0] == {"n": 0, "s": "é"}
    floats = "SELECT 5 / 7 AS r, 0.000123456::DOUBLE AS small, 123456.789::DOUBLE AS big"
    shown = invoke("sql", "--db", db, floats).stdout  # a table is read by people: rounded
    assert "0.7143" in shown and "0.0001235" in shown and "123457.0" in shown
    assert "0.714285" not in shown
    assert json.loads(invoke("sql", "--db", db, "--format", "json", floats).stdout) == [
        {"r": 5 / 7, "small": 0.000123456, "big": 123456.789}]  # scripts: full precision
    wide = "SELECT " + ", ".join(f"'{'x' * 30}' AS c{i}" for i in range(20))
    assert "of 20 columns" in invoke("sql", "--db", db, wide).stderr
    assert invoke("sql", "--db", db, "--max-width", 0, wide).stderr == ""
    nested = invoke("sql", "--db", db, "--format", "csv",  # a cell holds a list as its JSON
                    """SELECT [1, 2] AS l, {'a': 'x,"y'} AS "it's", 3 AS n""")
    assert (nested.exit_code, nested.stdout) == (0, 'l,it\'s,n\n"[1,2]","{""a"":""x,\\""y""}",3\n')


GRADED = {"tests": [{"description": "t", "assert": [
    {"type": "llm-rubric", "value": "is good"}, {"type": "contains", "value": "a"},
    {"type": "factuality", "value": "x"}]}]}


def test_no_judge_is_said_before_the_run_and_errors_recorded(tmp_path):
    suite = write_suite(tmp_path, GRADED)
    outs = tmp_path / "o.jsonl"
    outs.write_text('{"output": "a"}\n{"output": "b ✓"}\n')
    result = invoke("eval", suite, "--outputs", outs, "--db", tmp_path / "r.duckdb")
    assert result.exit_code == 1
    warning = result.stderr.splitlines()[0]
    assert "no judge configured" in warning
    assert "2 model-graded assertion(s) (factuality, llm-rubric)" in warning
    assert "--judge-model" in warning
    con = duckdb.connect(str(tmp_path / "r.duckdb"))
    errors = con.execute("SELECT count(*) FROM assertion_results WHERE status = 'error' "
                         "AND reason LIKE '%no judge configured%'").fetchall()[0][0]
    assert errors == 4


def test_no_judge_warning_is_absent_without_graded_types(files):
    suite, outs, db = files
    assert "no judge" not in invoke("eval", suite, "--outputs", outs, "--db", db).stderr


JUDGED = """
judge: {model: gpt-4o-mini, api_key_env: CHECKLLM_TEST_JUDGE_KEY}
tests:
  - description: t
    assert: [{type: llm-rubric, value: the answer is good}]
"""


def test_no_cache_sends_again_and_dash_j_is_concurrency(tmp_path, monkeypatch):
    monkeypatch.setenv("CHECKLLM_TEST_JUDGE_KEY", "sk-test")
    suite = write_suite(tmp_path, JUDGED)
    outs = tmp_path / "o.jsonl"
    outs.write_text("".join(json.dumps({"test_id": "t", "output": f"good {i}"}) + "\n"
                            for i in range(3)))
    db = tmp_path / "r.duckdb"
    server = JudgeServer().start()
    try:
        args = ["eval", suite, "--outputs", outs, "--db", db, "--judge-base-url", server.url,
                "-j", 2]
        for extra in ([], [], ["--no-cache"]):
            assert invoke(*args, *extra).exit_code == 0
        sent = server.counts["POST /v1/chat/completions"]
    finally:
        server.stop()
    assert sent == 6  # 3, then 0 (answered from judge_calls), then 3 again
    con = duckdb.connect(str(db))
    configs = [json.loads(c) for (c,) in con.execute(
        "SELECT config FROM runs ORDER BY started_at").fetchall()]
    assert [c["judge"]["concurrency"] for c in configs] == [2, 2, 2]
    assert [c["judge"]["cache"] for c in configs] == [True, True, False]


def test_promptfoo_config_and_results_file_as_a_promptfoo_user_has_them(tmp_path):
    here = ROOT / "tests" / "promptfoo_results"
    db = tmp_path / "r.duckdb"
    result = invoke("eval", "-c", here / "promptfooconfig.yaml", "--outputs",
                    here / "results.json", "--db", db, "--format", "json", "-o",
                    tmp_path / "scored.csv")
    document = json.loads(result.stdout)
    # promptfoo 0.123.1 on the same file: 8 passed, 4 failed (the 'empty answer' test)
    assert (document["cases"], document["pass"], document["fail"]) == (12, 8, 4)
    assert {r["provider"] for r in document["summary"]} == {"model-a", "model-b"}
    assert pl.read_csv(tmp_path / "scored.csv").height == 12

"""The CLI as a user meets it: formats, summary, exit codes 0/1/2, one-line errors."""

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest
from click.testing import CliRunner
from conftest import ROOT, write_suite

import checkllm_batch as cb
from checkllm_batch.cli import main
from checkllm_batch.errors import InputError

SUITE = {"tests": [{"description": "capital", "assert": [{"type": "contains", "value": "Paris"}]},
                   {"description": "math", "assert": [{"type": "equals", "value": "4"}]}]}
ROWS = [{"test_id": "capital", "provider": "a", "output": "Paris!"},
        {"test_id": "math", "provider": "a", "output": "4"},
        {"test_id": "math", "provider": "b", "output": "5"}]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def outputs_file(tmp_path: Path, fmt: str, rows=ROWS) -> str:
    frame = pl.DataFrame(rows)
    path = tmp_path / f"outputs.{fmt}"
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif fmt == "csv":
        frame.write_csv(path)
    elif fmt == "parquet":
        frame.write_parquet(path)
    elif fmt == "arrow":
        frame.write_ipc(path)
    elif fmt == "duckdb":
        con = duckdb.connect(str(tmp_path / "src.duckdb"))
        con.execute("CREATE TABLE outs AS SELECT * FROM frame")
        con.close()
        return f"duckdb:{tmp_path / 'src.duckdb'}:outs"
    return str(path)


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet", "arrow", "duckdb"])
def test_eval_reads_every_format(tmp_path, fmt):
    suite = write_suite(tmp_path, SUITE)
    db = tmp_path / "r.duckdb"
    result = invoke("eval", suite, "--outputs", outputs_file(tmp_path, fmt), "--db", db)
    assert result.exit_code == 1, result.output  # one case fails
    assert "3 cases, 2 passed, 1 failed, 0 errors" in result.output
    con = duckdb.connect(str(db))
    assert con.execute("SELECT count(*) FROM test_results").fetchone() == (3,)


@pytest.mark.parametrize("db,flags", [("src.duckdb", []), ("./sub/../src.duckdb", []),
                                      ("link.duckdb", []), ("src.duckdb", ["--dry-run"])])
def test_outputs_in_the_results_database_are_refused(tmp_path, db, flags):
    """A second, read-only connection to the file the run writes, in the same process: DuckDB
    refuses it (and aborted on the way out); one line, nothing else on stderr."""
    suite = write_suite(tmp_path, SUITE)
    outs = outputs_file(tmp_path, "duckdb")
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.duckdb").symlink_to(tmp_path / "src.duckdb")
    before = (tmp_path / "src.duckdb").read_bytes()
    cli = Path(sys.executable).parent / "checkllm-batch"
    proc = subprocess.run([str(cli), "eval", str(suite), "--outputs", outs, "--db", db, *flags],
                          capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})  # this checkout's code
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (f"Error: the outputs table is in the results database {db}; copy "
                           "it to another file or write the results to another database "
                           "(--db)\n")
    assert (tmp_path / "src.duckdb").read_bytes() == before
    with pytest.raises(InputError, match="the outputs table is in the results database"):
        cb.evaluate(suite, outs, db=tmp_path / db)  # the library refuses it too


def test_exit_zero_when_everything_passes_and_runs_accumulate(tmp_path):
    suite = write_suite(tmp_path, SUITE)
    db = tmp_path / "r.duckdb"
    outs = outputs_file(tmp_path, "jsonl", ROWS[:2])
    assert invoke("eval", suite, "--outputs", outs, "--db", db).exit_code == 0
    assert invoke("eval", suite, "--outputs", outs, "--db", db).exit_code == 0
    con = duckdb.connect(str(db))
    assert con.execute("SELECT count(*), count(DISTINCT run_id) FROM cases").fetchone() == (4, 2)
    assert con.execute("SELECT DISTINCT status FROM runs").fetchall() == [("finished",)]


def test_inline_outputs_need_no_outputs_file(tmp_path):
    suite = write_suite(tmp_path, {"tests": [{"providerOutput": "Paris", "assert": [
        {"type": "contains", "value": "Paris"}]}]})
    result = invoke("eval", suite, "--db", tmp_path / "r.duckdb")
    assert result.exit_code == 0, result.output


BAD_INPUT = [
    # (suite, outputs rows or raw JSONL text, fragments of the one-line error)
    (SUITE, [{"test_id": "captial", "output": "x"}],
     ["row 1", "test_id 'captial' matches no test", 'did you mean "capital"']),
    (SUITE, [{"test_id": "capital", "response": "x"}], ["no `output` column", "response"]),
    (SUITE, '{"test_id": "capital", "output": "x"}\n{"test_id": "math", output: 1}\n',
     ["outputs.jsonl:2", "malformed JSON line"]),
    (SUITE, [{"output": "x"}], ["no `test_id` column", "2 tests"]),
    ({"tests": [{"assert": [{"type": "contains", "value": "{{ x | nofilter }}"}]}]},
     [{"output": "x"}], ["template syntax error", "nofilter"]),
    ({"tests": [{"assert": [{"type": "icontain", "value": "x"}]}]}, [{"output": "x"}],
     ['unknown assertion type "icontain"', 'did you mean "icontains"']),
]


@pytest.mark.parametrize("suite,outputs,fragments", BAD_INPUT)
def test_bad_input_is_one_clear_line_and_exit_2(tmp_path, suite, outputs, fragments):
    path = tmp_path / "outputs.jsonl"
    path.write_text(outputs if isinstance(outputs, str)
                    else "".join(json.dumps(r) + "\n" for r in outputs))
    result = invoke("eval", write_suite(tmp_path, suite), "--outputs", path, "--db", tmp_path / "r.db")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.output


def test_missing_files_exit_2(tmp_path):
    suite = write_suite(tmp_path, SUITE)
    assert invoke("eval", tmp_path / "nope.yaml", "--db", tmp_path / "r.db").exit_code == 2
    result = invoke("eval", suite, "--outputs", tmp_path / "nope.jsonl", "--db", tmp_path / "r.db")
    assert result.exit_code == 2 and "outputs file not found" in result.output


def test_a_run_failed_on_bad_input_keeps_no_results_and_is_never_read_as_complete(tmp_path):
    """Row 6 names an unknown test: the run fails in batch 3. Batches 1-2 were committed,
    and are removed with the run's failure (no resume goes past a bad row; Ctrl-C and
    crashes keep theirs: e2e/test_interrupt.py, e2e/test_crash_resume.py); readers skip the
    run."""
    rows = [{"test_id": "capital", "output": "x"}] * 5 + [{"test_id": "bad", "output": "x"}]
    path = tmp_path / "outputs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = tmp_path / "r.duckdb"
    result = invoke("eval", write_suite(tmp_path, SUITE), "--outputs", path, "--db", db,
                    "--batch-rows", 2)
    assert result.exit_code == 2
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT status FROM runs").fetchall() == [("failed",)]
        for table in ("cases", "assertion_results", "test_results", "run_batches"):
            assert con.execute(f"SELECT count(*) FROM {table}").fetchall() == [(0,)], table
    metrics = invoke("metrics", "--db", db)
    assert metrics.exit_code == 2 and "no finished run" in metrics.output


def test_metrics_and_sql_commands(tmp_path):
    db = tmp_path / "r.duckdb"
    invoke("eval", ROOT / "data" / "suite.yaml", "--outputs", ROOT / "data" / "outputs.jsonl", "--db", db)
    result = invoke("metrics", "--db", db)
    assert result.exit_code == 0 and "precision" in result.output and "f1" in result.output
    result = invoke("sql", "--db", db, "SELECT count(*) AS n FROM cases")
    assert result.exit_code == 0 and "360" in result.output
    assert invoke("sql", "--db", db, "SELECT nope FROM cases").exit_code == 2
    assert invoke("metrics", "--db", db, "--run", "nope").exit_code == 2
    assert invoke("metrics", "--db", tmp_path / "missing.duckdb").exit_code == 2


def test_console_script_prints_no_traceback(tmp_path):
    cli = Path(sys.executable).parent / "checkllm-batch"
    suite = write_suite(tmp_path, {"tests": [{"assert": [{"type": "contians", "value": "x"}]}]})
    proc = subprocess.run([str(cli), "eval", str(suite), "--db", str(tmp_path / "r.db")],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and 'did you mean "contains"' in proc.stderr


@pytest.mark.parametrize("command", ["eval", "metrics", "sql"])
def test_every_command_has_help(command):
    result = invoke(command, "--help")
    assert result.exit_code == 0 and len(result.output.splitlines()) > 4


def failing_evaluator(monkeypatch) -> None:
    """A bug in the middle of a run: the evaluation of a batch raises."""
    from checkllm_batch.run.batches import BatchEvaluator

    def broken(self, *args, **kwargs):
        raise RuntimeError("boom ünï")

    monkeypatch.setattr(BatchEvaluator, "evaluate", broken)


@pytest.mark.parametrize("rows,break_it,code", [
    (ROWS[:2], False, 0),  # every test passes
    (ROWS, False, 1),  # a test fails
    ([{"test_id": "nope", "output": "x"}], False, 2),  # bad input
    (ROWS, True, 3),  # a bug: never 1, which reads as failing tests
])
def test_exit_codes_tell_a_crash_from_a_failing_test(tmp_path, monkeypatch, rows, break_it,
                                                     code):
    if break_it:
        failing_evaluator(monkeypatch)
    result = invoke("eval", write_suite(tmp_path, SUITE), "--outputs",
                    outputs_file(tmp_path, "jsonl", rows), "--db", tmp_path / "r.duckdb")
    assert result.exit_code == code, result.output


def test_an_unexpected_error_is_one_line_naming_the_log_of_its_traceback(tmp_path,
                                                                        monkeypatch):
    failing_evaluator(monkeypatch)
    db = tmp_path / "r.duckdb"
    result = invoke("eval", write_suite(tmp_path, SUITE), "--outputs",
                    outputs_file(tmp_path, "jsonl"), "--db", db)
    assert result.exit_code == 3
    [line] = result.stderr.splitlines()
    assert line.startswith("Error: unexpected error (RuntimeError: boom ünï)"), line
    log = Path(line.rsplit("the traceback is in ", 1)[1])
    trace = log.read_text(encoding="utf-8")
    assert trace.startswith("Traceback") and "RuntimeError: boom ünï" in trace
    log.unlink()
    with duckdb.connect(str(db)) as con:  # the run records the real cause
        assert con.sql("SELECT status, error FROM runs").fetchall() == [
            ("failed", "RuntimeError: boom ünï")]


def test_a_stop_mid_run_prints_the_resume_command(tmp_path, monkeypatch, judge_server):
    """A generator torn down mid-run (as Ctrl-C can land): exit 130, the run recorded
    `interrupted`, and the command to resume it said; the resume finishes it."""
    from judge_server import RUBRIC_SUITE

    from checkllm_batch.judge.openai_judge import OpenAIJudge

    send, sent = OpenAIJudge.send, []

    def stops(self, request):
        sent.append(request)
        if len(sent) == 5:
            raise GeneratorExit
        return send(self, request)

    monkeypatch.setattr(OpenAIJudge, "send", stops)
    suite = write_suite(tmp_path, RUBRIC_SUITE)
    rows = [{"test_id": "t", "output": f"good {i} ✓"} for i in range(12)]
    args = ["eval", suite, "--outputs", outputs_file(tmp_path, "jsonl", rows), "--db",
            tmp_path / "r.duckdb", "--batch-rows", "4", "--judge-base-url", judge_server.url,
            "--judge-concurrency", "1"]
    stopped = invoke(*args)
    assert stopped.exit_code == 130, stopped.output
    with duckdb.connect(str(tmp_path / "r.duckdb")) as con:
        [(run_id, status)] = con.sql("SELECT run_id, status FROM runs").fetchall()
    assert status == "interrupted"
    assert f"--resume {run_id}" in stopped.stderr
    monkeypatch.setattr(OpenAIJudge, "send", send)
    assert invoke(*args, "--resume", run_id).exit_code == 0

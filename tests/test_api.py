"""The Python API: evaluate frames or files, read results as Polars, copy runs."""

import polars as pl
from conftest import ROOT, write_suite

import checkllm_batch as cb

SUITE = {"defaultTest": {"assert": [{"type": "contains", "value": "{{expected}}",
                                     "metric": "hit"}]}}


def test_evaluate_an_arrow_table_and_read_frames(tmp_path):
    table = pl.DataFrame({"output": ["a b", "c"], "expected": ["b", "x"],
                          "provider": ["p", "p"]}).to_arrow()
    run = cb.evaluate(write_suite(tmp_path, SUITE), table)
    assert isinstance(run.test_results, pl.DataFrame)
    assert run.test_results["status"].to_list() == ["pass", "fail"]
    assert run.summary().row(0, named=True)["pass_rate"] == 0.5
    assert run.cases["vars"].to_list() == ['{"expected":"b"}', '{"expected":"x"}']


def test_write_copies_a_run_into_another_database(tmp_path):
    run = cb.evaluate(ROOT / "data" / "suite.yaml", ROOT / "data" / "outputs.jsonl")
    copy = cb.write(run, tmp_path / "archive.duckdb")
    assert copy.run_id == run.run_id
    assert copy.test_results.equals(run.test_results)
    assert copy.derived_metrics.sort("provider", "name").equals(
        run.derived_metrics.sort("provider", "name"))
    assert cb.get_run(tmp_path / "archive.duckdb").run_id == run.run_id
    again = cb.write(cb.get_run(tmp_path / "archive.duckdb"), tmp_path / "again.duckdb")
    assert again.test_results.equals(run.test_results)  # from a read-only reader


def test_suite_spec_is_stored_with_the_run(tmp_path):
    run = cb.evaluate(write_suite(tmp_path, SUITE), pl.DataFrame({"output": ["x"],
                                                                  "expected": ["x"]}))
    specs = run.table("assertions")
    assert specs["type"].to_list() == ["contains"]
    assert '"value": "{{expected}}"' in specs["spec"][0]

"""Fixtures for the analysis tests: a results database with two runs of a classifier suite."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import checkllm_batch as cb

HERE = Path(__file__).parent
SUITE = HERE / "classifier" / "suite.yaml"


@pytest.fixture(scope="session")
def two_runs(tmp_path_factory) -> tuple[Path, str, str]:
    """(database, run A, run B): run B regresses gpt-good on t3, improves local on t4, t5."""
    db = tmp_path_factory.mktemp("analysis") / "results.duckdb"
    run_a = cb.evaluate(SUITE, HERE / "classifier" / "outputs.jsonl", db=db)
    run_a.con.close()
    run_b = cb.evaluate(SUITE, HERE / "classifier" / "outputs_b.jsonl", db=db)
    run_b.con.close()
    return db, run_a.run_id, run_b.run_id


@pytest.fixture()
def label_suite(tmp_path) -> Path:
    """A suite with no inline tests: each row is a case, its `label` column the gold label."""
    path = tmp_path / "suite.yaml"
    path.write_text('defaultTest:\n  assert:\n    - type: equals\n      value: "{{label}}"\n')
    return path


@pytest.fixture()
def labelled_run(label_suite):
    """Evaluate columns (provider, output, label, ...) as rows of the label suite."""
    def run(**columns) -> cb.Run:
        return cb.evaluate(label_suite, pl.DataFrame(columns))
    return run

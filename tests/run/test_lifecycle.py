"""A run's record (run/lifecycle.py) is the same on both engines: bad input found mid-run
leaves no partial results, and a second Ctrl-C while the run is being recorded as stopped
cannot leave it `running`. Ray runs a local cluster of 2 CPUs, as in
tests/distributed/test_driver.py."""

from __future__ import annotations

import glob
import os
import signal
import time

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest
from conftest import write_suite

import checkllm_batch as cb
from checkllm_batch.errors import InputError, Interrupted

# one worker of pytest-xdist (tests/run.sh) runs every Ray test: one local cluster at a time
pytestmark = pytest.mark.xdist_group("ray")

ROWS, BATCH = 200, 50  # four batches locally, four fragments (one per row group) on Ray
SUITE = {"tests": [{"description": f"t{i}", "assert": [{"type": "contains", "value": "ü"}]}
                   for i in range(2)]}
TABLES = ("cases", "assertion_results", "test_results", "run_batches", "named_metrics")


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(params=["local", "ray"])
def engine(request) -> str:
    if request.param == "ray":
        request.getfixturevalue("ray_cluster")
    return request.param


def outputs(tmp_path, bad_row: int | None = None) -> str:
    """ROWS outputs (empty, unicode), in row groups of BATCH; `bad_row` names no test."""
    test_id = [f"t{i % 2}" for i in range(ROWS)]
    if bad_row is not None:
        test_id[bad_row] = "nope"
    frame = pl.DataFrame({"test_id": test_id,
                          "output": ["" if i % 9 == 0 else f"ünï {i}" for i in range(ROWS)]})
    path = tmp_path / "o.parquet"
    pq.write_table(frame.to_arrow(), path, row_group_size=BATCH)
    return str(path)


def evaluate(engine: str, tmp_path, source: str) -> cb.Run:
    suite = cb.load(write_suite(tmp_path, SUITE))
    db = tmp_path / "r.duckdb"
    if engine == "local":
        return cb.evaluate(suite, source, db=db, batch_rows=BATCH)
    from checkllm_batch.distributed import evaluate_ray

    return evaluate_ray(suite, source, db=db, results=str(tmp_path / "shards"),
                        batch_rows=BATCH)


def stored(tmp_path) -> dict[str, int]:
    with duckdb.connect(str(tmp_path / "r.duckdb"), read_only=True) as con:
        counts = {t: con.sql(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in TABLES}
        counts["runs"] = con.sql("SELECT list(status) FROM runs").fetchall()[0][0]
    return counts


def test_bad_input_mid_run_leaves_no_partial_results(engine, tmp_path):
    """Row 120 (the third batch or fragment) matches no test: the batches or shards before
    it were stored, and are removed with the run recorded `failed`."""
    with pytest.raises(InputError, match="test_id 'nope' matches no test"):
        evaluate(engine, tmp_path, outputs(tmp_path, bad_row=120))
    assert glob.glob(str(tmp_path / "shards" / "**" / "*.*"), recursive=True) == []
    assert stored(tmp_path) == {**dict.fromkeys(TABLES, 0), "runs": ["failed"]}


def test_a_good_run_stores_every_row(engine, tmp_path):
    """The same dataset, fixed: every row stored, the run finished (the test above is not
    passed by storing nothing)."""
    run = evaluate(engine, tmp_path, outputs(tmp_path))
    assert run.test_results["case_id"].to_list() == list(range(ROWS))
    assert run.status == "finished"


def test_a_second_ctrl_c_cannot_leave_the_run_running(engine, tmp_path, monkeypatch):
    """Ctrl-C while the run finishes, then again while it is recorded as interrupted: the
    second is ignored, the run is `interrupted` and Interrupted names it."""
    from checkllm_batch.metrics import named
    from checkllm_batch.store import runs as store

    def ctrl_c(*args, **kwargs) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)  # KeyboardInterrupt lands here, unless SIGINT is ignored

    real_fail_run = store.fail_run

    def fail_run(*args, **kwargs) -> None:
        ctrl_c()
        real_fail_run(*args, **kwargs)

    monkeypatch.setattr(named, "compute", ctrl_c)
    monkeypatch.setattr(store, "fail_run", fail_run)
    stopped: BaseException | None = None
    try:
        evaluate(engine, tmp_path, outputs(tmp_path))
    except BaseException as e:  # a KeyboardInterrupt escaping is the bug: caught, not fatal
        stopped = e
    assert isinstance(stopped, Interrupted), repr(stopped)
    assert stored(tmp_path)["runs"] == ["interrupted"]

"""A run's record (run/lifecycle.py) is the same on both engines: bad input found mid-run
leaves no partial results, a failure at start-up or a stop (Ctrl-C, generator teardown) at
any point records the run with its real cause, and a second Ctrl-C while the run is being
recorded as stopped cannot leave it `running`. Ray runs a local cluster of 2 CPUs, as in
tests/distributed/test_driver.py."""

from __future__ import annotations

import glob
import os
import signal
import threading
import time

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest
from conftest import write_suite

import checkllm_batch as cb
from checkllm_batch.errors import ConfigError, InputError, Interrupted
from checkllm_batch.suites.judge import JudgeConfig

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


def evaluate(engine: str, tmp_path, source: str, suite: dict = SUITE, **options) -> cb.Run:
    spec = cb.load(write_suite(tmp_path, suite))
    db = tmp_path / "r.duckdb"
    if engine == "local":
        return cb.evaluate(spec, source, db=db, batch_rows=BATCH, **options)
    from checkllm_batch.distributed import evaluate_ray

    return evaluate_ray(spec, source, db=db, results=str(tmp_path / "shards"),
                        batch_rows=BATCH, **options)


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


JUDGED = {"judge": {"model": "gpt-4o-mini", "api_key_env": "CHECKLLM_TEST_NO_SUCH_KEY"},
          "tests": [{"description": f"t{i}", "assert": [
              {"type": "contains", "value": "ü"}, {"type": "llm-rubric", "value": "good"}]}
              for i in range(2)]}


def ours() -> set[threading.Thread]:
    """Threads a run starts: its writer and judge pools, the read-ahead reader."""
    return {t for t in threading.enumerate()
            if t.name.startswith("ThreadPoolExecutor") or "(produce)" in t.name}


def test_a_start_up_failure_leaves_no_run_running(engine, tmp_path, monkeypatch):
    """No API key for the judge: ConfigError when the judge opens, after the run is
    recorded. The run ends `failed` with that cause (not `running`, later relabelled
    `interrupted`), its threads are gone and its database is free."""
    monkeypatch.delenv("CHECKLLM_TEST_NO_SUCH_KEY", raising=False)
    before = ours()
    with pytest.raises(ConfigError, match="CHECKLLM_TEST_NO_SUCH_KEY"):
        evaluate(engine, tmp_path, outputs(tmp_path), JUDGED)
    assert ours() - before == set()
    with duckdb.connect(str(tmp_path / "r.duckdb")) as con:  # read-write: no connection of the run left open
        [(status, error)] = con.sql("SELECT status, error FROM runs").fetchall()
    assert status == "failed" and error.startswith("ConfigError: ") \
        and "CHECKLLM_TEST_NO_SUCH_KEY" in error


class Stops:
    """A judge that answers, then on its `after`-th request raises `stop` (as Ctrl-C or a
    generator torn down would, mid-run)."""

    def __init__(self, stop: type[BaseException], after: int):
        self.stop, self.after, self.sent = stop, after, 0

    def send(self, request):
        from checkllm_batch.judge.protocol import Reply

        self.sent += 1
        if self.sent == self.after:
            raise self.stop()
        return Reply(text='{"reason": "ok", "pass": true, "score": 1.0}')


@pytest.mark.parametrize("stop", [KeyboardInterrupt, GeneratorExit])
def test_a_stop_mid_run_is_recorded_interrupted_and_resumes(engine, tmp_path, stop):
    """Ctrl-C or a generator's teardown after some batches: the run is `interrupted` with
    that cause, Interrupted names it for the resume hint, and `resume` finishes it (today a
    GeneratorExit left it `failed`, with no hint)."""
    source, config = outputs(tmp_path), JudgeConfig(model="m", concurrency=1)
    with pytest.raises(Interrupted) as stopped:
        evaluate(engine, tmp_path, source, JUDGED, judge=Stops(stop, 60), judge_config=config)
    with duckdb.connect(str(tmp_path / "r.duckdb")) as con:
        [(run_id, status, error)] = con.sql("SELECT run_id, status, error FROM runs").fetchall()
    assert (status, error) == ("interrupted", stop.__name__)
    assert stopped.value.run_id == run_id
    run = evaluate(engine, tmp_path, source, JUDGED, judge=Stops(stop, 0), judge_config=config,
                   resume=run_id)
    assert run.status == "finished" and run.test_results.height == ROWS

"""The public verbs: load a suite, evaluate outputs, read results, write them elsewhere."""

from __future__ import annotations

import contextlib
import itertools
import signal
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import duckdb
import orjson
import polars as pl
import pyarrow as pa

from .assertions import pool
from .errors import InputError, Interrupted
from .evaluate.engine import evaluate_batch
from .evaluate.plan import build_plan
from .judge.config import JudgeConfig
from .judge.protocol import Judge
from .load.cases import CaseBuilder
from .load.outputs import check_columns, read_ahead, read_batches, rechunk, row_count
from .progress import RunProgress
from .spec.model import Suite
from .spec.parse import load_suite
from .store import results as store

BATCH_ROWS = 100_000
# a RecordBatchReader is taken as read by load.outputs (reserved names already checked)
Outputs = str | Path | pl.DataFrame | pa.Table | pa.RecordBatchReader | None


@dataclass
class Run:
    """One evaluation run in a results database; its tables come back as Polars frames."""

    con: duckdb.DuckDBPyConnection
    run_id: str

    def table(self, name: str) -> pl.DataFrame:
        return store.frame(self.con, f"SELECT * EXCLUDE (run_id) FROM {name} WHERE run_id = ?",
                           [self.run_id])

    @property
    def cases(self) -> pl.DataFrame:
        return self.table("cases").sort("case_id")

    @property
    def assertion_results(self) -> pl.DataFrame:
        """Top-level rows in order, each assert-set followed by its members."""
        return self.table("assertion_results").sort(
            "case_id", pl.coalesce("parent_index", "assertion_index"),
            pl.col("parent_index").is_not_null(), "assertion_index")

    @property
    def test_results(self) -> pl.DataFrame:
        return self.table("test_results").sort("case_id")

    @property
    def named_metrics(self) -> pl.DataFrame:
        return self.table("named_metrics").sort("provider", "prompt", "metric", nulls_last=True)

    @property
    def derived_metrics(self) -> pl.DataFrame:
        return self.table("derived_metrics")

    def summary(self) -> pl.DataFrame:
        """Per provider: cases, pass / fail / error counts and pass rate."""
        return store.frame(self.con, """
            SELECT c.provider, COUNT(*) AS cases,
                   COUNT(*) FILTER (t.status = 'pass') AS pass,
                   COUNT(*) FILTER (t.status = 'fail') AS fail,
                   COUNT(*) FILTER (t.status = 'error') AS error,
                   ROUND(COUNT(*) FILTER (t.status = 'pass') / COUNT(*), 4) AS pass_rate
            FROM test_results t JOIN cases c USING (run_id, case_id)
            WHERE t.run_id = ? GROUP BY ALL ORDER BY c.provider NULLS FIRST""", [self.run_id])


def evaluate(suite: Suite | str | Path, outputs: Outputs = None, *, db: str | Path = ":memory:",
             batch_rows: int = BATCH_ROWS, progress: bool = False,
             config: dict[str, Any] | None = None, judge_config: JudgeConfig | None = None,
             judge: Judge | None = None, resume: str | None = None,
             engine: str = "local") -> Run:
    """Score `outputs` (a file, a DuckDB table, a frame, or the suite's inline outputs)
    against `suite`, writing results batch by batch into the DuckDB database `db`.

    Model-graded assertions go to the judge of `judge_config` (default: the suite's
    `judge:` block), through `judge` if given (else the OpenAI-compatible client).
    `resume` re-runs the run of that id in place: no judge call already answered is sent.
    `engine="ray"` runs it on a Ray cluster (a Parquet dataset; see docs/ray.md)."""
    from .judge.across import finish_across
    from .judge.session import close_hook, open_hook

    if not isinstance(suite, Suite):
        suite = load_suite(suite)
    if engine != "local":
        from .distributed import evaluate_on
        return evaluate_on(engine, suite, outputs, db=db, batch_rows=batch_rows,
                           config=config, resume=resume, judge_config=judge_config,
                           judge=judge)
    judge_config = (judge_config or JudgeConfig.from_sources(suite.judge)).check()
    plan = build_plan(suite)
    source, batches, total = _batches(suite, outputs, batch_rows)
    large = total is None or total >= pool.POOL_MIN  # a file of unknown length may be
    if large and any(p.atype.pooled for p in plan.assertions):
        pool.start()  # the workers start up while the first batch is read
    first = next(batches, None)
    if first is None:
        raise InputError(f"{source}: no rows")
    builder = CaseBuilder(plan, first.schema, source)
    con = store.connect(db)
    config = {**(config or {}), "judge": judge_config.record()}
    run_id = store.resume_run(con, resume) if resume else \
        store.start_run(con, suite, source, config)
    hook = open_hook(plan, con, run_id, judge_config, judge=judge, progress=progress)
    bar = RunProgress(run_id, total, progress, hook.runner)
    done = 0
    # One writer thread: DuckDB stores batch k while Polars evaluates batch k + 1.
    writer = ThreadPoolExecutor(max_workers=1)
    pending: Future | None = None
    try:
        for batch in itertools.chain([first], batches):
            if batch.schema != first.schema:
                builder, first = CaseBuilder(plan, batch.schema, source), batch
            cases = builder.build(batch, done)
            results, tests = evaluate_batch(plan, cases, judge=hook)
            if pending is not None:
                pending.result()
            pending = writer.submit(store.append, con, run_id, cases, results, tests)
            done += batch.num_rows
            bar.update(tests, batch.num_rows)
        writer.shutdown(wait=True)
        if pending is not None:
            pending.result()
        finish_across(con, run_id, plan, hook)
        store.finish_run(con, run_id, suite)
    except BaseException as e:
        with _no_sigint():  # a second Ctrl-C must not leave the run `running`
            writer.shutdown(wait=True, cancel_futures=True)
            interrupted = isinstance(e, KeyboardInterrupt)
            store.fail_run(con, run_id, f"{type(e).__name__}: {e}",
                           "interrupted" if interrupted else "failed")
        if interrupted:
            raise Interrupted(run_id) from e
        raise
    finally:
        bar.close()
        close_hook(hook)
    return Run(con, run_id)


def dry_run(suite: Suite | str | Path, outputs: Outputs = None, *, db: str | Path = ":memory:",
            batch_rows: int = BATCH_ROWS, judge_config: JudgeConfig | None = None):
    """Plan the judge calls of an evaluation without sending any: returns the runner's Stats
    (requests, unique, already answered in `db`, to send, estimated tokens and cost). Only
    model-graded assertions are planned: no other check runs (no webhook, no python)."""
    from .judge.session import close_hook, open_hook, plan_calls

    if not isinstance(suite, Suite):
        suite = load_suite(suite)
    judge_config = (judge_config or JudgeConfig.from_sources(suite.judge)).check()
    plan = build_plan(suite)
    source, batches, _ = _batches(suite, outputs, batch_rows)
    con = store.connect(db) if str(db) == ":memory:" or Path(db).exists() else store.connect(":memory:")
    hook = open_hook(plan, con, None, judge_config, dry_run=True)
    builder, schema, done = None, None, 0
    try:
        for batch in batches:
            if batch.schema != schema:
                builder, schema = CaseBuilder(plan, batch.schema, source), batch.schema
            assert builder is not None
            plan_calls(plan, builder.build(batch, done), hook)
            done += batch.num_rows
    finally:
        close_hook(hook)
    return hook.runner.stats if hook.runner else None


@contextlib.contextmanager
def _no_sigint() -> Iterator[None]:
    """Ignore Ctrl-C while the run's record is put right (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _batches(suite: Suite, outputs: Outputs, rows: int
             ) -> tuple[str, Iterator[pa.RecordBatch], int | None]:
    if isinstance(outputs, pl.DataFrame):
        outputs = outputs.to_arrow()
    if isinstance(outputs, pa.Table):
        check_columns(outputs.column_names, "<table>")
        return "<table>", iter(outputs.to_batches(max_chunksize=rows)), outputs.num_rows
    if isinstance(outputs, pa.RecordBatchReader):
        return "<table>", rechunk(outputs, rows), None
    if outputs is not None:
        source = str(outputs)
        return source, read_ahead(read_batches(source, rows)), row_count(source)
    table = inline_outputs(suite)
    return suite.path, iter(table.to_batches(max_chunksize=rows)), table.num_rows


def inline_outputs(suite: Suite) -> pa.Table:
    """The outputs written in the suite itself (`providerOutput` / `output` per test)."""
    missing = [t.name for t in suite.tests if t.output is None]
    if missing or not suite.inline_tests:
        raise InputError(f"{suite.path}: {'test ' + repr(missing[0]) if missing else 'the suite'}"
                         " has no inline output (providerOutput); pass --outputs")
    rows = [{"__test_index": t.index,
             "output": t.output if isinstance(t.output, str) else orjson.dumps(t.output).decode(),
             "output_kind": "text" if isinstance(t.output, str) else "json"}
            for t in suite.tests]
    return pa.Table.from_pylist(rows)


def open_results(db: str | Path) -> duckdb.DuckDBPyConnection:
    return store.connect(db, create=False)


def get_run(db: str | Path | duckdb.DuckDBPyConnection, run: str | None = None) -> Run:
    """A run of a results database: `run`, or the last finished one."""
    con = db if isinstance(db, duckdb.DuckDBPyConnection) else open_results(db)
    rows = con.sql(
        "SELECT run_id FROM runs WHERE (? IS NULL AND status = 'finished') OR run_id = ? "
        "ORDER BY started_at DESC LIMIT 1", params=[run, run]).fetchall()
    if not rows:
        raise InputError(f"no run {run!r} in the database" if run else
                         "the database has no finished run (name an interrupted or failed one)")
    return Run(con, rows[0][0])


def write(run: Run, path: str | Path) -> Run:
    """Copy a run (all its rows) into the results database at `path`."""
    target = store.connect(path)
    target.close()
    run.con.execute(f"ATTACH '{Path(path).as_posix()}' AS target")
    try:
        for table in ("runs", "assertions", "cases", "assertion_results", "test_results",
                      "named_metrics", "derived_metrics"):
            run.con.execute(f"INSERT INTO target.{table} BY NAME SELECT * FROM {table} "
                            f"WHERE run_id = ?", [run.run_id])
    finally:
        run.con.execute("DETACH target")
    return get_run(path, run.run_id)

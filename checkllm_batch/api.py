"""The public verbs: load a suite, evaluate outputs, read results, write them elsewhere."""

from __future__ import annotations

import contextlib
import itertools
import signal
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import duckdb
import orjson
import polars as pl
import pyarrow as pa

from .analysis.results import Results
from .analysis.run import Run
from .assertions import pool
from .errors import InputError, Interrupted
from .evaluate.engine import evaluate_batch
from .evaluate.plan import build_plan
from .judge.protocol import Judge
from .load.cases import CaseBuilder
from .load.outputs import (
    check_columns,
    decoded,
    fingerprint,
    read_ahead,
    read_batches,
    rechunk,
    row_count,
    skip_rows,
)
from .metrics import named
from .progress import RunProgress
from .store import cases as cases_store
from .store import results as store
from .store.across import finish_across
from .suites.judge import JudgeConfig
from .suites.model import Suite
from .suites.parse import load_suite

BATCH_ROWS = 100_000
# a RecordBatchReader is taken as read by load.outputs (reserved names already checked)
Outputs = str | Path | pl.DataFrame | pa.Table | pa.RecordBatchReader | None


def evaluate(suite: Suite | str | Path, outputs: Outputs = None, *, db: str | Path = ":memory:",
             batch_rows: int = BATCH_ROWS, progress: bool = False,
             config: dict[str, Any] | None = None, judge_config: JudgeConfig | None = None,
             judge: Judge | None = None, resume: str | None = None,
             engine: str = "local", copy_outputs: bool = False) -> Run:
    """Score `outputs` (a file, a DuckDB table, a frame, or the suite's inline outputs)
    against `suite`, writing results batch by batch into the DuckDB database `db`.

    Model-graded assertions go to the judge of `judge_config` (default: the suite's
    `judge:` block), through `judge` if given (else the OpenAI-compatible client).
    `resume` re-runs the run of that id in place: no judge call already answered is sent.
    `engine="ray"` runs it on a Ray cluster (Parquet files, or a Ray Dataset as `outputs`;
    see docs/ray.md). A Parquet file's outputs and vars are not copied into `db`: its
    `cases` view reads them from the file (store/cases.py), unless `copy_outputs`."""
    from .evaluate.judging.session import close_hook, open_hook

    check_apart(outputs, db)
    if not isinstance(suite, Suite):
        suite = load_suite(suite)
    if engine != "local":
        from .distributed import evaluate_on
        return evaluate_on(engine, suite, outputs, db=db, batch_rows=batch_rows,
                           config=config, resume=resume, judge_config=judge_config,
                           judge=judge)
    judge_config = (judge_config or JudgeConfig.from_sources(suite.judge)).check()
    plan = build_plan(suite)
    config = {**(config or {}), "judge": judge_config.record()}
    source, batches, total, identity = _batches(suite, outputs, batch_rows, config)
    large = total is None or total >= pool.POOL_MIN  # a file of unknown length may be
    if large and any(p.atype.pooled for p in plan.assertions):
        pool.start()  # the workers start up while the first batch is read
    try:
        first = next(batches, None)
        if first is None:
            raise InputError(f"{source}: no rows")
        builder = CaseBuilder(plan, first.schema, source)
    except BaseException:
        _stop_reading(batches)
        raise
    reader, batches = batches, itertools.chain([first], batches)
    del first  # not held for the whole run: the builder keeps its schema
    con = store.connect(db)
    # One writer thread: DuckDB stores batch k while Polars evaluates batch k + 1; the
    # outputs' content hash is computed beside them and recorded with the first batch.
    writer = ThreadPoolExecutor(max_workers=1)
    hashed = writer.submit(_fingerprint, identity, config)
    if resume:
        resume = store.run_to_resume(con, resume)
        run_id, done = resume, store.resume_run(con, resume, suite, hashed.result())
    else:
        run_id, done = store.start_run(con, suite, source, config), 0
    text = _keeps_text(con, run_id, resume, copy_outputs, outputs, builder)
    hook = open_hook(plan, con, run_id, judge_config, judge=judge, progress=progress)
    bar = RunProgress(run_id, total, progress, hook.runner, done=done)
    out = con.cursor()  # the writer's own connection: its transactions are its own
    pending: Future | None = None
    try:
        for batch in skip_rows(batches, done):
            if batch.schema != builder.schema:
                builder = CaseBuilder(plan, batch.schema, source)
            cases = builder.build(batch, done)
            results, tests = evaluate_batch(plan, cases, judge=hook)
            if pending is not None:
                pending.result()
            pending = writer.submit(store.append, out, run_id, cases, results, tests,
                                    hashed.result, text=text)
            done += batch.num_rows
            bar.update(tests, batch.num_rows)
            del batch, cases, results, tests  # the writer's now: freed once it stores them
        writer.shutdown(wait=True)
        if pending is not None:
            pending.result()
        with store.transaction(con):  # judged across cases, metrics, `finished`: all or none
            finish_across(con, run_id, plan, hook)
            named.compute(con, run_id, suite)
            store.finish_run(con, run_id)
    except BaseException as e:
        with _no_sigint():  # a second Ctrl-C must not leave the run `running`
            # a batch evaluated whole and handed to the writer is saved, even if the writer
            # has not picked it up yet: cancelling it would lose work a resume then repeats
            writer.shutdown(wait=True)
            _stop_reading(reader)
            interrupted = isinstance(e, KeyboardInterrupt)
            store.fail_run(con, run_id, f"{type(e).__name__}: {e}",
                           "interrupted" if interrupted else "failed",
                           keep=not isinstance(e, InputError))
            close_hook(hook)
            out.close()
            con.close()  # the file is free for readers and a resume
        if interrupted:
            raise Interrupted(run_id) from e
        raise
    finally:
        bar.close()
    close_hook(hook)
    out.close()
    return Run(con, run_id)


def dry_run(suite: Suite | str | Path, outputs: Outputs = None, *, db: str | Path = ":memory:",
            batch_rows: int = BATCH_ROWS, judge_config: JudgeConfig | None = None):
    """Plan the judge calls of an evaluation without sending any: returns the runner's Stats
    (requests, unique, already answered in `db`, to send, estimated tokens and cost). Only
    model-graded assertions are planned: no other check runs (no webhook, no python)."""
    from .evaluate.judging.session import close_hook, open_hook, plan_calls

    check_apart(outputs, db)
    if not isinstance(suite, Suite):
        suite = load_suite(suite)
    judge_config = (judge_config or JudgeConfig.from_sources(suite.judge)).check()
    plan = build_plan(suite)
    source, batches, _, _ = _batches(suite, outputs, batch_rows)
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


def check_apart(outputs: Outputs, db: str | Path) -> None:
    """Outputs read from a table of the results database itself would be a second, read-only
    connection to the file the run writes, in the same process: DuckDB refuses it, and may
    abort the process on the way out."""
    if not (isinstance(outputs, (str, Path)) and str(outputs).startswith("duckdb:")
            and str(db) != ":memory:"):
        return
    path = str(outputs).split(":", 2)[1]
    if Path(path).resolve() == Path(db).resolve():
        raise InputError(f"the outputs table is in the results database {db}; copy it to "
                         "another file or write the results to another database (--db)")


def _batches(suite: Suite, outputs: Outputs, rows: int, config: dict[str, Any] | None = None
             ) -> tuple[str, Iterator[pa.RecordBatch], int | None, str | pa.Table | None]:
    """(the source's name, its batches, its rows if known, what identifies its content: a
    file, a table, or nothing for a stream not read from a file named in `config`)."""
    if isinstance(outputs, pl.DataFrame):
        outputs = outputs.to_arrow()
    if isinstance(outputs, pa.Table):
        check_columns(outputs.column_names, "<table>")
        batches = (decoded(b) for b in outputs.to_batches())
        return "<table>", rechunk(batches, rows), outputs.num_rows, outputs
    if isinstance(outputs, pa.RecordBatchReader):  # the CLI's filtered rows of a file
        return "<table>", rechunk(outputs, rows), None, (config or {}).get("outputs")
    if outputs is not None:
        source = str(outputs)
        return source, read_ahead(read_batches(source, rows)), row_count(source), source
    table = inline_outputs(suite)
    return suite.path, rechunk(table.to_batches(), rows), table.num_rows, None


def _stop_reading(reader: Iterator) -> None:
    """The source's reader stops and closes its file or connection now, not at exit."""
    getattr(reader, "close", lambda: None)()


def _keeps_text(con, run_id: str, resume: str | None, copy: bool, outputs: Outputs,
                builder: CaseBuilder) -> bool:
    """Whether the run copies its cases' text, or reads it from its Parquet file: a new run
    as asked and as the file allows, a resumed one as it began (its file's record renewed)."""
    if resume:
        copy = not con.execute("SELECT 1 FROM case_sources WHERE run_id = ?",
                               [run_id]).fetchall()
    source = str(outputs) if isinstance(outputs, (str, Path)) else None
    return copy or not cases_store.leave_in_file(con, run_id, source, builder.row_vars,
                                                 builder.vars_heads())


def _fingerprint(identity: str | pa.Table | None, config: dict[str, Any]) -> str | None:
    """The outputs' content hash, with the filters that chose their rows."""
    digest = fingerprint(identity)
    return store.content_hash([digest, config.get("filters")]) if digest else None


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
    """A run of a results database: `run` (its id, a unique prefix, `last` or `previous`),
    or the last finished one: `cb.Results(db).run(run)`."""
    return Results(db).run(run)


def write(run: Run, path: str | Path) -> Run:
    """Copy a run (all its rows) into the results database at `path`, streamed through
    Arrow (the run's database may be open read-only). Its cases' text is copied too, even
    where the run reads it from its source file."""
    target = store.connect(path)
    try:
        if target.execute("SELECT 1 FROM runs WHERE run_id = ?", [run.run_id]).fetchall():
            raise InputError(f"{path}: already holds run {run.run_id}")
        with store.transaction(target):
            for table in ("runs", "assertions", "cases", "assertion_results", "test_results",
                          "named_metrics", "derived_metrics", "run_batches"):
                rows = run.con.sql(  # noqa: F841  (read by DuckDB by name)
                    f"SELECT * FROM {table} WHERE run_id = ?", params=[run.run_id]
                ).to_arrow_reader(BATCH_ROWS)
                into = "case_rows" if table == "cases" else table  # the view's text, stored
                target.execute(f"INSERT INTO {into} BY NAME SELECT * FROM rows")
    finally:
        target.close()
    return get_run(path, run.run_id)

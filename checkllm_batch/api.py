"""The public verbs: load a suite, evaluate outputs, read results, write them elsewhere.
How a run goes is in run/ (the single-process engine) and distributed/ (Ray)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, overload

import duckdb

from . import arguments
from .analysis.database import Results
from .analysis.run import Run
from .assertions.reading import load_suite
from .errors import InputError, did_you_mean
from .judge.protocol import Judge, Stats
from .load.sources import Outputs, check_apart, inline_outputs
from .load.stream import BATCH_ROWS
from .run.dry_run import dry_run as plan_only
from .run.local import evaluate_local
from .run.sample import SEED as SAMPLE_SEED
from .store import runs as store
from .store.cases import refuse_unreadable
from .suites.judge import JudgeConfig
from .suites.model import Suite

__all__ = ["BATCH_ROWS", "Outputs", "Run", "check_apart", "dry_run", "evaluate", "get_run",
           "inline_outputs", "open_results", "write"]


DB = str | Path | duckdb.DuckDBPyConnection
ENGINES = ("local", "ray")  # "ray": distributed/, imported only when chosen


@overload
def evaluate(suite: Suite | str | Path, outputs: Outputs = ..., *, db: None,
             batch_rows: int = ..., progress: bool = ..., config: dict[str, Any] | None = ...,
             judge_config: JudgeConfig | None = ..., judge: Judge | None = ...,
             resume: str | None = ..., engine: str = ..., results: str | None = ...,
             copy_outputs: bool = ..., text_parts: bool = ...,
             judge_sample: str | float | None = ..., judge_sample_seed: int = ...
             ) -> dict[str, Any]: ...
@overload
def evaluate(suite: Suite | str | Path, outputs: Outputs = ..., *, db: DB = ...,
             batch_rows: int = ..., progress: bool = ..., config: dict[str, Any] | None = ...,
             judge_config: JudgeConfig | None = ..., judge: Judge | None = ...,
             resume: str | None = ..., engine: str = ..., results: str | None = ...,
             copy_outputs: bool = ..., text_parts: bool = ...,
             judge_sample: str | float | None = ..., judge_sample_seed: int = ...) -> Run: ...
def evaluate(suite: Suite | str | Path, outputs: Outputs = None, *,
             db: DB | None = ":memory:", batch_rows: int = BATCH_ROWS,
             progress: bool = False, config: dict[str, Any] | None = None,
             judge_config: JudgeConfig | None = None, judge: Judge | None = None,
             resume: str | None = None, engine: str = "local", results: str | None = None,
             copy_outputs: bool = False, text_parts: bool = False,
             judge_sample: str | float | None = None, judge_sample_seed: int = SAMPLE_SEED
             ) -> Run | dict[str, Any]:
    """Score `outputs` (a file, a DuckDB table, a frame, or the suite's inline outputs)
    against `suite`, writing results batch by batch into the DuckDB database `db`.

    Model-graded assertions go to the judge of `judge_config` (default: the suite's
    `judge:` block), through `judge` if given (else the OpenAI-compatible client).
    `resume` re-runs the run of that id in place: no judge call already answered is sent.
    `engine="ray"` runs it on a Ray cluster (Parquet files, or a Ray Dataset as `outputs`;
    see docs/ray.md): its Parquet shards go to the directory `results` (kept); with `db=None`
    only the shards are written and their manifest (a dict) is returned.
    A Parquet file's outputs and vars are not copied into `db`: its `cases` view reads them from the file (store/cases.py), unless `copy_outputs`; every
    other source's (a dataframe's) are stored in `db`, one file to move or copy, or, with
    `text_parts`, written as Parquet parts in a folder beside a file `db`
    (`<db>.cases/<run_id>/`: faster, and to be moved or copied with it).
    `judge_sample` ('2%', 0.02, or a count such as 2000) judges a seeded sample of the cases
    only (run/sample.py); the others' graded assertions end `skipped`, every deterministic
    check still runs on every row. A resumed run keeps the sample it began with."""
    _check(suite, outputs, db, batch_rows, judge_sample, judge_sample_seed)
    for value, name in ((progress, "progress"), (copy_outputs, "copy_outputs"),
                        (text_parts, "text_parts")):
        arguments.flag(value, name)
    arguments.optional_text(resume, "resume")
    arguments.optional_text(results, "results")
    arguments.mapping(config, "config")
    if engine not in ENGINES:
        hint = did_you_mean(engine, ENGINES) if isinstance(engine, str) else ""
        raise InputError(f"engine: takes 'local' or 'ray', not {arguments.given(engine)}{hint}")
    if copy_outputs and text_parts:
        raise InputError("copy_outputs and text_parts: choose one place for the cases' text")
    suite = suite if isinstance(suite, Suite) else load_suite(suite)
    if engine != "local":
        if judge_sample is not None or text_parts:
            raise InputError("judge_sample and text_parts are not supported with "
                             "engine='ray' yet")
        from .distributed import evaluate_ray
        return evaluate_ray(suite, outputs, db=db, batch_rows=batch_rows, config=config,
                            resume=resume, results=results, judge_config=judge_config,
                            judge=judge)
    if db is None:
        raise InputError("db: None (write only the shards) is an engine='ray' option: the "
                         "local engine writes to a database path, ':memory:' or a connection")
    if results is not None:
        raise InputError("results: the shards' directory is an engine='ray' option: the local "
                         "engine writes to db")
    return evaluate_local(suite, outputs, db=db, batch_rows=batch_rows, progress=progress,
                          config=config, judge_config=judge_config, judge=judge,
                          resume=resume, copy_outputs=copy_outputs, text_parts=text_parts,
                          sample=(judge_sample, judge_sample_seed))


def dry_run(suite: Suite | str | Path, outputs: Outputs = None, *, db: str | Path = ":memory:",
            batch_rows: int = BATCH_ROWS, judge_config: JudgeConfig | None = None,
            judge_sample: str | float | None = None, judge_sample_seed: int = SAMPLE_SEED
            ) -> Stats | None:
    """Plan the judge calls of an evaluation without sending any: returns the runner's Stats
    (requests, unique, already answered in `db`, to send, estimated tokens and cost). Only
    model-graded assertions are planned: no other check runs (no webhook, no python). With
    `judge_sample`, only the calls of the cases in that sample."""
    _check(suite, outputs, db, batch_rows, judge_sample, judge_sample_seed)
    suite = suite if isinstance(suite, Suite) else load_suite(suite)
    return plan_only(suite, outputs, db=db, batch_rows=batch_rows, judge_config=judge_config,
                     sample=(judge_sample, judge_sample_seed))


def _check(suite: Any, outputs: Any, db: Any, batch_rows: Any, judge_sample: Any,
           judge_sample_seed: Any) -> None:
    """A run's arguments, before anything is read or created."""
    arguments.outputs(outputs)
    arguments.rows(batch_rows)
    arguments.sample(judge_sample, judge_sample_seed)
    if db is not None:  # None: a Ray run that writes only its shards
        arguments.database(db)
        check_apart(outputs, db)


def open_results(db: str | Path) -> duckdb.DuckDBPyConnection:
    arguments.database(db)
    return store.connect(db, create=False)


def get_run(db: str | Path | duckdb.DuckDBPyConnection, run: str | None = None) -> Run:
    """A run of a results database: `run` (its id, a unique prefix, `last` or `previous`),
    or the last finished one: `cb.Results(db).run(run)`."""
    arguments.optional_text(run, "run")
    return Results(db).run(run)


def write(run: Run, path: str | Path) -> Run:
    """Copy a run (all its rows) into the results database at `path`, streamed through
    Arrow (the run's database may be open read-only). Its cases' text is copied too, even
    where the run reads it from its source file or parts; a run whose text is gone or
    damaged there is refused, naming the path."""
    if not isinstance(run, Run):
        raise InputError(f"run: takes a Run (cb.evaluate's, or cb.get_run), not "
                         f"{arguments.given(run)}")
    if not isinstance(path, (str, Path)) or str(path) == ":memory:":
        raise InputError(f"path: takes a database file path to copy the run into, not "
                         f"{arguments.given(path)}")
    arguments.database(path, "path")
    refuse_unreadable(run.con, run.run_id, f"cannot write run {run.run_id} to {path}")
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

"""The single-process engine: a source's batches evaluated in order in this process, each
stored by one writer thread while the next is evaluated (DuckDB stores batch k while Polars
evaluates batch k + 1); the outputs' content hash is computed beside them and recorded with
the first batch. The run's record is lifecycle.py's, as on Ray."""

from __future__ import annotations

import itertools
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator

import pyarrow as pa
from duckdb import DuckDBPyConnection

from ..analysis.run import Run
from ..assertions import pool
from ..assertions.registry import VectorType
from ..errors import InputError
from ..evaluate.judging.cascade import CascadeHook
from ..evaluate.judging.session import opened_hook
from ..evaluate.plan import Plan
from ..judge.protocol import Judge
from ..load.cases import CaseBuilder
from ..load.fingerprint import batch_digest, fingerprint, skip_checked
from ..load.sources import Outputs, open_outputs
from ..load.stream import skip_rows
from ..progress import RunProgress
from ..store import cases as cases_store
from ..store import runs as store
from ..suites.judge import JudgeConfig
from ..suites.model import Suite
from . import cascade, lifecycle
from .batches import BatchEvaluator
from .sample import SEED, JudgeSample, resumed_sample, sampled


def evaluate_local(suite: Suite, outputs: Outputs, *, db: str | Path | DuckDBPyConnection,
                   batch_rows: int,
                   progress: bool = False, config: dict[str, Any] | None = None,
                   judge_config: JudgeConfig | None = None, judge: Judge | None = None,
                   resume: str | None = None, copy_outputs: bool = False,
                   text_parts: bool = False, sample: tuple[Any, int] = (None, SEED)) -> Run:
    """cb.evaluate in this process (its arguments are documented there; `sample` is its
    judge_sample and judge_sample_seed)."""
    prepared = lifecycle.prepare(suite, judge_config, config,
                                 partial(open_outputs, suite, outputs, batch_rows))
    source, batches, total, identity = prepared.outputs
    config, plan = prepared.config, prepared.plan
    with lifecycle.Lifecycle() as life:
        resources = life.resources
        resources.callback(_stop_reading, batches)
        chosen = JudgeSample.parse(sample[0], total, sample[1]) if sample[0] is not None \
            else None
        if chosen is not None:
            config["judge_sample"] = chosen.record()
        _start_pool(plan, total)
        evaluator = BatchEvaluator(plan, source)
        builder, batches = _checked_first(evaluator, batches)
        con = life.connect(db)
        out = con.cursor()  # the writer's own connection: its transactions are its own
        resources.callback(out.close)
        writer = ThreadPoolExecutor(max_workers=1)  # closed before `out`: it writes there,
        resources.callback(writer.shutdown, wait=True)  # and a batch handed to it is saved
        hashed = writer.submit(_fingerprint, identity, config)
        if resume:  # checked before the run is taken up: a refusal leaves it as it was
            resumed = store.run_to_resume(con, resume)
            chosen = resumed_sample(con, resumed, chosen)
            text_parts = cases_store.has_parts(con, resumed)  # its text kept as it began
            if identity is None:  # a stream: its committed rows read again, and checked
                batches = skip_checked(batches, store.committed_batches(con, resumed),
                                       resumed)
        if text_parts:
            cases_store.parts_root(con)  # its folder checked before the run starts
        calibration = cascade.draw(config, prepared.judge_config, total)
        run_id, done = life.begin(suite, source, config, resume, hashed.result)
        skip = 0 if resume and identity is None else done
        text = _keeps_text(con, run_id, resume, (copy_outputs, text_parts), outputs, builder,
                           done)
        hook = resources.enter_context(opened_hook(plan, con, run_id, prepared.judge_config,
                                                   judge=judge, progress=progress))
        if calibration is not None and isinstance(hook, CascadeHook):  # certified first
            again = open_outputs(suite, outputs, batch_rows, config)[1]
            resources.callback(_stop_reading, again)
            cascade.calibrate(con, run_id, hook, evaluator, again, calibration)
        evaluator.hook = sampled(hook, chosen)
        bar = RunProgress(run_id, total, progress, hook.runner, done=done)
        resources.callback(bar.close)
        append = partial(_append, out, run_id, hashed.result, text, identity is None)
        _store_batches(evaluator, skip_rows(batches, skip), done, writer, append, bar)
        life.finish(plan, hook)
    return Run(con, run_id)


def _start_pool(plan: Plan, total: int | None) -> None:
    """The worker processes of the pooled types start while the first batch is read."""
    large = total is None or total >= pool.POOL_MIN  # a file of unknown length may be
    if large and any(isinstance(p.atype, VectorType) and p.atype.pooled
                     for p in plan.assertions):
        pool.start()


def _checked_first(evaluator: BatchEvaluator, batches: Iterator[pa.RecordBatch]
                   ) -> tuple[CaseBuilder, Iterator[pa.RecordBatch]]:
    """The first batch's case builder and all the batches: a source with no rows or
    without the columns the suite needs is an error before any run starts."""
    first = next(batches, None)
    if first is None:
        raise InputError(f"{evaluator.source}: no rows")
    builder = evaluator.builder(first.schema)
    return builder, itertools.chain([first], batches)  # not held here for the whole run


def _store_batches(evaluator: BatchEvaluator, batches: Iterator[pa.RecordBatch], first: int,
                   writer: ThreadPoolExecutor, append: Callable[..., None],
                   bar: RunProgress) -> None:
    """Each batch evaluated here, then handed to the writer once it has stored the one
    before; every batch stored when this returns."""
    pending: Future | None = None
    for batch in batches:
        cases, results, tests = evaluator.evaluate(batch, first)
        if pending is not None:
            pending.result()
        pending = writer.submit(append, cases, results, tests, batch)
        first += batch.num_rows
        bar.update(tests, batch.num_rows)
        del batch, cases, results, tests  # the writer's now: freed once it stores them
    writer.shutdown(wait=True)
    if pending is not None:
        pending.result()


def _append(out, run_id: str, outputs_hash: Callable[[], str | None],
            text: bool | cases_store.Parts, streamed: bool, cases, results, tests,
            batch: pa.RecordBatch) -> None:
    """One batch stored by the writer: a stream's batch with its rows' digest."""
    digest = partial(batch_digest, [batch]) if streamed else lambda: None
    store.append(out, run_id, cases, results, tests, outputs_hash, text=text, digest=digest)


def _stop_reading(reader: Iterator) -> None:
    """The source's reader stops and closes its file or connection now, not at exit."""
    getattr(reader, "close", lambda: None)()


def _keeps_text(con, run_id: str, resume: str | None, asked: tuple[bool, bool],
                outputs: Outputs, builder: CaseBuilder, done: int) -> bool | cases_store.Parts:
    """How the run keeps its cases' text (`asked`: copy_outputs, text_parts): written as
    Parquet parts beside the database when asked; read from its Parquet file (False), a new
    run as asked and as the file allows, a resumed one as it began (its file's record
    renewed); else copied into the database (True), a dataframe's included."""
    copy, in_parts = asked
    if in_parts:
        return cases_store.parts(con, run_id, done)
    if not isinstance(outputs, (str, Path)):
        return True
    if resume:
        copy = not con.execute("SELECT 1 FROM case_sources WHERE run_id = ?",
                               [run_id]).fetchall()
    return copy or not cases_store.leave_in_file(con, run_id, str(outputs), builder.row_vars,
                                                 builder.vars_heads())


def _fingerprint(identity: str | None, config: dict[str, Any]) -> str | None:
    """The outputs' content hash, with the filters that chose their rows."""
    digest = fingerprint(identity)
    return store.content_hash([digest, config.get("filters")]) if digest else None

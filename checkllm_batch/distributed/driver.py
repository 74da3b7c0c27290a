"""--engine ray: the evaluation of a Parquet dataset (or a Ray Dataset) on a Ray cluster.

The driver plans fragments from the files' footers (or units of a Dataset's blocks), one
Ray task evaluates each into Parquet shards, and with a database the shards are loaded
into it as one run, which ends as the single-machine run ends (named and derived metrics,
status `finished`)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Iterator

import duckdb
import polars as pl

from ..analysis.run import Run
from ..assertions.registry import Kind
from ..errors import CheckLLMError, InputError
from ..evaluate.judging.session import opened_hook
from ..evaluate.plan import Plan
from ..judge.protocol import Judge
from ..run import lifecycle
from ..run.batches import TABLES
from ..store import runs as store
from ..suites.judge import JudgeConfig
from ..suites.model import Suite
from .blocks import DATASET, is_dataset, plan_blocks
from .fragments import filesystem, parquet_files, plan_fragments
from .judging import rounds
from .shards import done, run_unit, shard_path

# one evaluating process per task, and the libraries that fan out to every core kept to it
TASK_ENV = {"CHECKLLM_WORKERS": "1", "POLARS_MAX_THREADS": "1", "OMP_NUM_THREADS": "1",
            "RAYON_NUM_THREADS": "1"}
MANIFEST = "manifest.json"


def check_supported(plan: Plan, db) -> None:
    """What the Ray engine cannot run is an error before any work starts: the types decided
    across a test's outputs are decided over the loaded cases, so they need a database."""
    for p in plan.assertions:
        if p.kind is Kind.ACROSS and db is None:
            test = next(t for t in plan.suite.tests if p.tests is None or t.index in p.tests)
            raise InputError(
                f"{plan.suite.path}: test {test.description or test.index!r}: {p.spec.type} "
                "is decided across the outputs of a test, over the results database: "
                "give --db with --engine ray")


def evaluate_ray(suite: Suite, outputs: Any, *,
                 db: str | Path | duckdb.DuckDBPyConnection | None = ":memory:",
                 results: str | None = None, batch_rows: int = 100_000,
                 config: dict[str, Any] | None = None, num_cpus: int | None = None,
                 resume: str | None = None, judge_config: JudgeConfig | None = None,
                 judge: Judge | None = None):
    """Evaluate a Parquet dataset (a file, a directory or a glob; local or a URI), or a Ray
    Dataset, on Ray. Shards go to `results` (kept) or a temporary directory (removed); with
    `db` they are loaded into it and the Run is returned, else the manifest of the shards.
    `resume` takes up a stopped run of `db` over Parquet files again: the fragments whose
    shards it wrote are kept. Model-graded assertions go to the judge of `judge_config`
    (default: the suite's) from this process only (docs/ray.md)."""
    prepared = lifecycle.prepare(suite, judge_config, config,
                                 lambda config: _units(outputs, batch_rows, resume))
    check_supported(prepared.plan, db)
    if prepared.judge_config.cascade:
        raise InputError("a judge cascade runs on the local engine only (--engine local): "
                         "its calibration grades a random set of cases before any batch")
    (source, fragments, refs), plan = prepared.outputs, prepared.plan
    with lifecycle.Lifecycle() as life:
        con = life.connect(db) if db is not None else None
        if results is not None and "://" not in results:
            results = os.path.abspath(results)
        if resume:
            resume = store.run_to_resume(con, resume) if con is not None else resume
            results = _resumable(con, resume, source)
        directory = life.resources.enter_context(_results_dir(results))
        manifest = _manifest(directory, suite, source, fragments, reuse=refs is None)
        # from here the shards are this run's: bad input in them removes them (never before:
        # a refused directory holds another run's)
        life.resources.push(partial(_discard, directory, fragments))
        work = Work(suite, source, directory, batch_rows, prepared.judge_config, refs)
        if con is None:
            hook = life.resources.enter_context(opened_hook(
                plan, store.connect(":memory:"), None, prepared.judge_config, judge=judge))
            work.run(fragments, hook.runner, num_cpus)
            return manifest
        config = {**prepared.config, "engine": "ray", "results": results}
        # a resumed run's committed batches are whole fragments: they are not loaded again
        run_id, committed = life.begin(suite, source, config, resume)
        hook = life.resources.enter_context(opened_hook(plan, con, run_id,
                                                        prepared.judge_config, judge=judge))
        work.run(fragments, hook.runner, num_cpus)
        _load(con, run_id, directory, [f for f in fragments if f.first_case_id >= committed])
        life.finish(plan, hook)
    return Run(con, run_id)


def _discard(directory: str, fragments: list, kind, error: BaseException | None,
             trace) -> None:
    """Bad input in a fragment: the shards of the others are removed with the manifest, as
    the single-machine run removes its stored rows. They are no run's results, and no
    resume can go past the bad row (the fixed file is another file)."""
    if not isinstance(error, InputError):
        return  # kept: a resume takes them up
    fs, manifest = filesystem(f"{directory.rstrip('/')}/{MANIFEST}")
    paths = [filesystem(shard_path(directory, t, f.index))[1] for f in fragments for t in TABLES]
    for info in fs.get_file_info([manifest, *paths]):
        if info.is_file:
            fs.delete_file(info.path)


def _units(outputs: Any, batch_rows: int, resume: str | None
           ) -> tuple[str, list, dict[int, list] | None]:
    """(the outputs' name, the units of work, and for a Ray Dataset each unit's blocks)."""
    units: list  # a Dataset's Blocks or the files' Fragments: a task reads either
    if is_dataset(outputs):
        if resume:
            raise InputError("resume (--resume) takes up a run over Parquet files: a Ray "
                             "Dataset's rows are not identified across runs (write it with "
                             "write_parquet and evaluate the files to resume)")
        units, refs = plan_blocks(outputs, batch_rows)
        source: str = DATASET
    elif isinstance(outputs, (str, Path)):
        source, refs = str(outputs), None
        units = plan_fragments(*parquet_files(source), batch_rows)
    else:
        raise InputError("--engine ray reads Parquet files or a Ray Dataset: give a path, a "
                         "directory or a glob (e.g. 'outputs/*.parquet'), or "
                         "ray.data.read_parquet(...)")
    if not units:
        raise InputError(f"{source}: no rows")
    return source, units, refs


def _resumable(con, run_id: str, source: str) -> str:
    """The shards directory of a Ray run to resume (it must have kept them: --results)."""
    if con is None:
        raise InputError("--resume needs the results database (--db) of the run")
    row = con.execute("SELECT config, outputs_path FROM runs WHERE run_id = ?",
                      [run_id]).fetchall()
    if not row:
        raise InputError(f"no run {run_id!r} in the database to resume")
    config, outputs = json.loads(row[0][0] or "{}"), row[0][1]
    if config.get("engine") != "ray" or not config.get("results"):
        raise InputError(f"run {run_id!r} kept no shards (it ran without --engine ray "
                         "--results DIR): resume it with the engine it ran on")
    if outputs != source:
        raise InputError(f"run {run_id!r} scored {outputs}, not {source}")
    return config["results"]


@contextmanager
def _results_dir(results: str | None) -> Iterator[str]:
    if results is not None:
        yield results
        return
    with tempfile.TemporaryDirectory(prefix="checkllm-ray-") as directory:
        yield directory


def _manifest(directory: str, suite: Suite, source: str, fragments: list, reuse: bool) -> dict:
    """The suite and units of this run, written beside the shards; shards already there
    are kept only when they come from the same suite and fragments (a resumed run), and
    never for a Ray Dataset (`reuse` False: its rows are not identified across runs)."""
    spec = json.dumps(suite.to_json(), sort_keys=True, default=str).encode()
    manifest = {"outputs": source, "suite": hashlib.sha256(spec).hexdigest(),
                "fragments": [f.record() for f in fragments]}
    fs, path = filesystem(f"{directory.rstrip('/')}/{MANIFEST}")
    if fs.get_file_info(path).is_file and not reuse:
        raise InputError(f"{directory}: holds shards already, and a Ray Dataset's shards are "
                         "never reused: give an empty --results directory")
    if fs.get_file_info(path).is_file:
        with fs.open_input_stream(path) as f:
            if json.loads(f.read()) != manifest:
                raise InputError(f"{directory}: holds the shards of another suite, dataset or "
                                 "batch size; give an empty --results directory")
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(path) as f:
        f.write(json.dumps(manifest, indent=1).encode())
    return manifest


@dataclass
class Work:
    """The Ray tasks of a run: one per unit (fragment, or a Dataset's blocks in `refs`) not
    yet in `directory`, in rounds while judge requests are pending; Ray retries a task
    whose worker dies."""

    suite: Suite
    source: str
    directory: str
    batch_rows: int
    judge_config: JudgeConfig
    refs: dict[int, list] | None = None

    def data(self, unit) -> list:
        """What a unit's task reads: the dataset's path, or the unit's Ray blocks."""
        return [self.source] if self.refs is None else self.refs[unit.index]

    def run(self, fragments: list, runner, num_cpus: int | None) -> None:
        try:
            import ray
        except ModuleNotFoundError:
            raise InputError("--engine ray needs Ray: pip install 'checkllm-batch[ray]'"
                             ) from None
        started = _connect(ray, num_cpus)
        try:
            task = ray.remote(run_unit).options(
                num_cpus=1, max_retries=3, runtime_env={"env_vars": TASK_ENV})
            suite = ray.put(self.suite)

            def run_round(todo: list, known: dict) -> list:
                replies = ray.put(known)
                refs = [task.remote(suite, f, self.directory, self.batch_rows,
                                    self.judge_config, replies, *self.data(f)) for f in todo]
                try:
                    outs = ray.get(refs)
                except ray.exceptions.RayTaskError:  # the others end first: no shard is
                    ray.wait(refs, num_returns=len(refs))  # written after the error is
                    raise
                return [(f, out.get("missing", [])) for f, out in zip(todo, outs)]

            try:
                rounds(run_round, runner,
                       [f for f in fragments if not done(self.directory, f.index)])
            except ray.exceptions.RayTaskError as e:
                if isinstance(e.cause, CheckLLMError):  # a bad row group: our one-line error
                    raise e.cause from None
                raise
        finally:
            if started:
                ray.shutdown()


def _connect(ray, num_cpus: int | None) -> bool:
    """Join the cluster of RAY_ADDRESS (or the one this process is in), else start a local
    one on this machine's cores (or `num_cpus`). True when this call started Ray."""
    if ray.is_initialized():
        return False
    if os.environ.get("RAY_ADDRESS"):
        ray.init(log_to_driver=False, logging_level=logging.WARNING)
    else:
        ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.WARNING)
    return True


def _load(con, run_id: str, directory: str, fragments: list) -> None:
    """The shards into the run's tables, fragment by fragment in case order."""
    for f in fragments:
        cases, results, tests = (pl.read_parquet(shard_path(directory, t, f.index))
                                 for t in TABLES)  # in store.append's order
        store.append(con, run_id, cases, results, tests, lambda: None)

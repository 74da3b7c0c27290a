"""A run's record, the same whatever engine evaluates its batches: prepared, started or taken
up again inside its own guard, then finished (cross-case verdicts, named metrics and status
in one transaction), or ended `failed` / `interrupted` however it stops. The one module
outside store/ that moves a run from state to state.

    prepared = prepare(suite, judge_config, config, read)
    with Lifecycle() as life:
        life.resources.callback(...)          # every thread, reader, pool, bar opened for it
        con = life.connect(db)
        run_id, done = life.begin(suite, source, prepared.config, resume)
        ...                                   # the batches
        life.finish(prepared.plan, hook)
"""

from __future__ import annotations

import contextlib
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Callable, Generic, Iterator, TypeVar

import duckdb

from ..errors import InputError, Interrupted
from ..evaluate.judging.hook import JudgeHook
from ..evaluate.plan import Plan, build_plan
from ..metrics import named
from ..store import cases as cases_store
from ..store import runs as store
from ..store.across import finish_across
from ..store.storage import StorageError, storage_error
from ..suites.judge import JudgeConfig
from ..suites.model import Suite

T = TypeVar("T")


@dataclass
class Prepared(Generic[T]):
    """What every engine (and the dry run) starts from: the judge settings checked, the plan,
    the run's config with its judge's record, and the outputs as the engine reads them."""

    judge_config: JudgeConfig
    plan: Plan
    config: dict[str, Any]
    outputs: T


def prepare(suite: Suite, judge_config: JudgeConfig | None, config: dict[str, Any] | None,
            read: Callable[[dict[str, Any]], T]) -> Prepared[T]:
    """The one first step: settings, plan, outputs (`read(config)` opens them); a mistake in
    any is an error before a run is recorded."""
    judge_config = (judge_config or JudgeConfig.from_sources(suite.judge)).check()
    plan = build_plan(suite)
    config = {**(config or {}), "judge": judge_config.record()}
    return Prepared(judge_config, plan, config, read(config))


# what reads as a stop rather than a failure: Ctrl-C, and a generator torn down mid-run
STOPS = (KeyboardInterrupt, GeneratorExit)


class Lifecycle:
    """The guard of one run. Everything opened for it goes into `resources` (an ExitStack,
    closed last-in first-out); `begin` records the run inside the guard. On leaving:
    resources closed, then, if anything was raised, the run recorded `interrupted` (Ctrl-C,
    generator teardown: Interrupted raised, naming the run to resume) or `failed` with the
    real cause, and the connection closed (the file is free for readers and a resume). Bad
    input removes the rows stored so far: no resume can go past it (the fixed file is another
    file). A second Ctrl-C while the record is put right is ignored: it must not leave the run
    `running`. A full or read-only disk (store/storage.py) interrupts the run, its cause
    recorded where the disk still takes it (else the next open finds it interrupted): a
    StorageError says what to free and which run to resume. With no database (no `connect`: Ray's shards only) it owns the resources
    alone."""

    def __init__(self) -> None:
        self.con: duckdb.DuckDBPyConnection | None = None
        self.run_id: str | None = None
        self.finished = False
        self.resources = contextlib.ExitStack()

    def __enter__(self) -> Lifecycle:
        return self

    def connect(self, db: str | Path | duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
        """The run's database, opened once its outputs are known to be readable."""
        self.con = store.connect(db)
        return self.con

    def begin(self, suite: Suite, source: str | None, config: dict[str, Any],
              resume: str | None = None, outputs_hash: Callable[[], str | None] = lambda: None
              ) -> tuple[str, int]:
        """A new run of `suite` over `source`, or the run `resume` names taken up again (its
        suite and, where known, its outputs' content checked): (its id, the rows already
        committed, which the engine skips). A Ctrl-C meanwhile lands once the run is guarded."""
        assert self.con is not None, "a run is recorded in a database"
        with _no_sigint(defer=True):
            if resume is None:
                self.run_id, done = store.start_run(self.con, suite, source, config), 0
            else:
                self.run_id = store.run_to_resume(self.con, resume)
                done = store.resume_run(self.con, self.run_id, suite, outputs_hash())
        return self.run_id, done

    def finish(self, plan: Plan, hook: JudgeHook) -> None:
        """Every batch stored: the assertions decided across a test's cases (select-best,
        max-score), the named metrics and the status `finished`, all or none."""
        assert self.con is not None and self.run_id is not None
        with store.transaction(self.con):
            finish_across(self.con, self.run_id, plan, hook)
            named.compute(self.con, self.run_id, plan.suite)
            store.finish_run(self.con, self.run_id)
        self.finished = True  # a stop after this leaves it finished

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if error is None:
            self.resources.close()
            return
        disk = self._disk(error)
        with _no_sigint():
            try:
                self.resources.__exit__(kind, error, trace)
            finally:
                self._record(error, disk)
        if self.run_id is None or self.finished:
            return
        if disk is not None:
            raise type(disk)(f"{disk}, then resume the run with --resume {self.run_id}") \
                from None
        if isinstance(error, STOPS) and not isinstance(error, Interrupted):
            raise Interrupted(self.run_id) from error

    def _disk(self, error: BaseException) -> StorageError | None:
        """`error` as a full or read-only disk under the run's database, if it is one."""
        path = cases_store.database_path(self.con) if self.con is not None else None
        return storage_error(error, str(path or ":memory:"))

    def _record(self, error: BaseException, disk: StorageError | None) -> None:
        if self.con is None:
            return
        if self.run_id is not None and not self.finished:
            stopped = isinstance(error, STOPS) or disk is not None
            try:
                store.fail_run(self.con, self.run_id, _cause(error),
                               "interrupted" if stopped else "failed",
                               keep=not isinstance(error, InputError))
            except duckdb.Error:
                if disk is None:
                    raise
        self.con.close()


def _cause(error: BaseException) -> str:
    """The error as recorded: its type and message; for a stop, what stopped it."""
    if isinstance(error, Interrupted):
        error = error.__cause__ or error
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


@contextlib.contextmanager
def _no_sigint(defer: bool = False) -> Iterator[None]:
    """Ctrl-C held off (main thread only): ignored, or with `defer` raised once the block
    is over."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed: list[int] = []
    previous = signal.signal(signal.SIGINT, (lambda n, f: pressed.append(n)) if defer
                             else signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed:
        raise KeyboardInterrupt

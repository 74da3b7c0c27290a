"""A run's record, the same whatever engine evaluates its batches: started or taken up again,
then finished (cross-case verdicts, named metrics and status in one transaction), or ended
`failed` / `interrupted` however it stops. The one module outside store/ that moves a run
from state to state."""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Callable, Iterator

import duckdb

from ..errors import InputError, Interrupted
from ..evaluate.judging.hook import JudgeHook
from ..evaluate.plan import Plan
from ..metrics import named
from ..store import cases as cases_store
from ..store import runs as store
from ..store.across import finish_across
from ..store.storage import storage_error
from ..suites.model import Suite

Stop = Callable[[BaseException], None]


def begin(con: duckdb.DuckDBPyConnection, suite: Suite, source: str | None,
          config: dict[str, Any], resume: str | None = None,
          outputs_hash: Callable[[], str | None] = lambda: None) -> tuple[str, int]:
    """A new run of `suite` over `source`, or the run `resume` names taken up again (its
    suite and, where known, its outputs' content checked): (its id, rows already committed,
    which the engine skips)."""
    if resume is None:
        return store.start_run(con, suite, source, config), 0
    run_id = store.run_to_resume(con, resume)
    return run_id, store.resume_run(con, run_id, suite, outputs_hash())


@contextlib.contextmanager
def recorded(con: duckdb.DuckDBPyConnection, run_id: str,
             stop: Stop = lambda e: None) -> Iterator[None]:
    """The run's work. If it raises, `stop(error)` ends the engine's own work (threads,
    readers, judge, shards), then the run is recorded `interrupted` (Ctrl-C: Interrupted
    is raised, naming the run to resume) or `failed`, and the connection is closed (the
    file is free for readers and a resume). Bad input found on the way removes the rows
    stored so far: no resume can go past it (the fixed file is another file). A second
    Ctrl-C meanwhile is ignored: it must not leave the run `running`. A full or read-only
    disk (store/storage.py) interrupts the run, its cause recorded where the disk still
    takes it (else the next open finds it interrupted): a StorageError says what to free."""
    try:
        yield
    except BaseException as e:
        disk = storage_error(e, str(cases_store.database_path(con) or ":memory:"))
        with _no_sigint():
            stop(e)
            interrupted = isinstance(e, KeyboardInterrupt) or disk is not None
            try:
                store.fail_run(con, run_id, f"{type(e).__name__}: {e}",
                               "interrupted" if interrupted else "failed",
                               keep=not isinstance(e, InputError))
            except duckdb.Error:
                if disk is None:
                    raise
            con.close()
        if disk is not None:
            raise type(disk)(f"{disk}, then resume the run with --resume {run_id}") from None
        if interrupted:
            raise Interrupted(run_id) from e
        raise


def finish(con: duckdb.DuckDBPyConnection, run_id: str, plan: Plan, hook: JudgeHook) -> None:
    """Every batch stored: the assertions decided across a test's cases (select-best,
    max-score), the named metrics and the status `finished`, all or none."""
    with store.transaction(con):
        finish_across(con, run_id, plan, hook)
        named.compute(con, run_id, plan.suite)
        store.finish_run(con, run_id)


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

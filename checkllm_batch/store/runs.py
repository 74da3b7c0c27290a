"""Write a run into the results database, batch by batch, and compute its metrics in SQL."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import socket
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from ..errors import InputError
from ..suites.model import Suite
from .cases import Parts, create_cases_view, drop_parts
from .schema import migrate, pending
from .storage import storage_error

# Low-cardinality strings go to DuckDB dictionary-encoded: about twice as fast to insert.
REPEATED = {"type", "metric", "status", "provider", "prompt", "test_id", "description",
            "output_kind"}
CASE_COLUMNS = ["case_id", "test_id", "test_index", "description", "provider", "prompt", "vars",
                "output", "output_kind", "latency_ms", "cost"]
RESULT_COLUMNS = ["case_id", "assertion_index", "type", "metric", "weight", "metric_only",
                  "status", "pass", "score", "reason", "parent_index", "named_scores", "votes",
                  "cascade_stage", "confidence", "certified"]
TEST_COLUMNS = ["case_id", "status", "pass", "score", "reason"]


MEMORY_LIMIT = "512MB"
# Written blocks a file database keeps in memory while a run's batches go in, before they are
# let go at once (`_let_go`): about what a 1M-case run writes lean (its text left in the
# source file), so a 10M-case run peaks where a 1M one does. Not a lower memory_limit: under
# one, DuckDB 2.0 hands freed memory back to the system (a purge of its allocator and
# malloc_trim of the whole process) whenever the buffer is full, every ~100 ms of a run, and
# the next batch faults it all in again: a 1M-case run took 1.13M page faults and 3.0 s of
# system time under 128 MB, against 0.53M and 1.8 s with the blocks let go once.
WRITE_BUFFER = 128 * 2**20


def connect(path: str | Path | duckdb.DuckDBPyConnection, *, create: bool = True
            ) -> duckdb.DuckDBPyConnection:
    """A connection to a results database. To write (`create`): created if need be, migrated
    to the current schema, and runs left `running` by a process that is gone are marked
    interrupted. To read (not `create`): opened read-only, so readers never block each
    other nor change the file (in a process that already writes it: that connection's
    database, read-write). A DuckDB connection given is used through a cursor of its own
    (closing it leaves the caller's open), its database written as a path's would be."""
    if isinstance(path, duckdb.DuckDBPyConnection):
        return _prepared(path.cursor(), "the connection given", create)
    memory = str(path) == ":memory:"
    if not create and not memory and not Path(path).exists():
        raise InputError(f"{path}: results database not found")
    return _prepared(_open(path, read_only=not create and not memory), path,
                     create or memory)


def _prepared(con: duckdb.DuckDBPyConnection, name: str | Path, write: bool
              ) -> duckdb.DuckDBPyConnection:
    if write:
        # A bounded buffer: queries beyond it spill to disk (a run's written blocks are let
        # go long before it fills: see WRITE_BUFFER)
        con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
        try:
            migrate(con)
        except duckdb.InvalidInputException as e:  # e.g. a connection opened read-only
            raise InputError(f"{name}: cannot write to it: {str(e).splitlines()[0]}") from None
        _mark_abandoned(con)
    elif pending(con):
        raise InputError(f"{name}: written by an older checkllm-batch; run an eval into it "
                         "once to upgrade it")
    create_cases_view(con)  # each run's text found from where the database is now
    return con


def _open(path: str | Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    try:
        return duckdb.connect(str(path), read_only=read_only)
    except duckdb.ConnectionException:
        if read_only:  # this process already has it open for writing: share that
            return _open(path, read_only=False)
        raise InputError(f"{path}: open read-only in this process (a Results or "
                         "open_results connection): close it before writing to it") from None
    except duckdb.Error as e:
        held = re.search(r"Conflicting lock is held in .*?\(PID (\d+)\)", str(e))
        if held:
            raise InputError(
                f"{path}: in use by another process (PID {held[1]}): a database is written "
                "by one process at a time, and read by many only while none writes it; wait "
                "for that process (an eval, a notebook, a sql prompt) to finish") from None
        raise storage_error(e, str(path)) or InputError(
            f"{path}: cannot open: {str(e).splitlines()[0]}") from None


def _mark_abandoned(con: duckdb.DuckDBPyConnection) -> None:
    """Runs left `running` by a process of this machine that no longer exists (SIGKILL, a
    power cut) are interrupted: resumable, never read as complete."""
    host = socket.gethostname()
    rows = con.execute("SELECT run_id, pid FROM runs WHERE status = 'running' AND host = ?",
                       [host]).fetchall()
    gone = [run for run, pid in rows if pid is not None and not _alive(pid)]
    if gone:
        con.execute("UPDATE runs SET status = 'interrupted', error = ? WHERE list_contains(?, "
                    "run_id)", ["the process running it ended before it finished", gone])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def frame(con: duckdb.DuckDBPyConnection, query: str, params: list | dict | None = None
          ) -> pl.DataFrame:
    """A query's result as a Polars frame."""
    result = pl.from_arrow(con.sql(query, params=params).to_arrow_table())
    assert isinstance(result, pl.DataFrame)
    return result


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)


def content_hash(value: Any) -> str:
    """A suite's identity: the hash of its parsed content (its files included)."""
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


# the assertions table's columns (store/schema.py)
ASSERTION_COLUMNS = {"run_id": pl.String, "test_index": pl.Int32, "test_id": pl.String,
                     "assertion_index": pl.Int32, "type": pl.String, "metric": pl.String,
                     "weight": pl.Float64, "metric_only": pl.Boolean, "spec": pl.String}


def start_run(con: duckdb.DuckDBPyConnection, suite: Suite, outputs: str | None,
              config: dict[str, Any]) -> str:
    run_id = new_run_id()
    con.execute(
        "INSERT INTO runs (run_id, started_at, status, suite_path, outputs_path, config, suite, "
        "suite_hash, host, pid) VALUES (?, current_timestamp, 'running', ?, ?, ?, ?, ?, ?, ?)",
        [run_id, suite.path, outputs, json.dumps(config), json.dumps(suite.to_json(), default=str),
         content_hash(suite.to_json()), socket.gethostname(), os.getpid()])
    rows = [(run_id, t.index, t.id or t.description, i, a.label, a.metric, a.weight,
             a.metric_only, json.dumps(a.to_json(), default=str))
            for t in suite.tests for i, a in enumerate(t.asserts)]
    if rows:  # in one insert: executemany runs a statement per row (~0.4 CPU-s for 640)
        assertion_rows = pl.DataFrame(  # noqa: F841  (read by DuckDB by name)
            rows, schema=ASSERTION_COLUMNS, orient="row").to_arrow()
        con.execute("INSERT INTO assertions BY NAME SELECT * FROM assertion_rows")
    return run_id


def run_to_resume(con: duckdb.DuckDBPyConnection, name: str) -> str:
    """The id of the run `--resume NAME` names: its id, a unique prefix, or `last` (the run
    started last, whatever its status)."""
    rows = [r[0] for r in con.execute(
        "SELECT run_id FROM runs WHERE starts_with(run_id, ?) OR ? = 'last' "
        "ORDER BY started_at DESC", [name, name]).fetchall()]
    if name in rows or (rows and (name == "last" or len(rows) == 1)):
        return name if name in rows else rows[0]
    if not rows:
        raise InputError(f"no run {name!r} in the database to resume")
    raise InputError(f"run id prefix {name!r} matches {len(rows)} runs: give more of it")


def resume_run(con: duckdb.DuckDBPyConnection, run_id: str, suite: Suite,
               outputs_hash: str | None) -> int:
    """Take up an unfinished run of this suite and these outputs again: its committed
    batches stay, the rest goes. Returns the rows already committed (to skip)."""
    row = con.execute("SELECT status, suite_hash, outputs_hash, host, pid FROM runs "
                      "WHERE run_id = ?", [run_id]).fetchall()
    if not row:
        raise InputError(f"no run {run_id!r} in the database to resume")
    status, suite_hash, stored_outputs, host, pid = row[0]
    if status == "finished":
        raise InputError(f"run {run_id} is finished: there is nothing to resume (leave out "
                         "--resume to start a new run)")
    if status == "running" and host == socket.gethostname() and pid != os.getpid() \
            and pid is not None and _alive(pid):
        raise InputError(f"run {run_id} is still running (PID {pid})")
    if suite_hash is not None and suite_hash != content_hash(suite.to_json()):
        raise InputError(f"run {run_id} ran another suite (its content differs): resume it "
                         "with the suite it ran, or leave out --resume to start a new run")
    if None not in (stored_outputs, outputs_hash) and stored_outputs != outputs_hash:
        raise InputError(f"run {run_id} ran on other outputs (their content differs): resume "
                         "it with the outputs it ran on, or leave out --resume to start a new "
                         "run")
    committed = con.execute("SELECT COALESCE(SUM(rows), 0) FROM run_batches WHERE run_id = ?",
                            [run_id]).fetchall()[0][0]
    with transaction(con):
        for table in ("case_rows", "assertion_results", "test_results"):
            con.execute(f"DELETE FROM {table} WHERE run_id = ? AND case_id >= ?",
                        [run_id, committed])
        for table in ("named_metrics", "derived_metrics"):
            con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
        con.execute("UPDATE runs SET status = 'running', finished_at = NULL, error = NULL, "
                    "host = ?, pid = ? WHERE run_id = ?",
                    [socket.gethostname(), os.getpid(), run_id])
    return int(committed)


def committed_batches(con: duckdb.DuckDBPyConnection, run_id: str
                      ) -> list[tuple[int, str | None]]:
    """(rows, digest) of each batch of the run committed so far, in order."""
    return [(int(rows), digest) for rows, digest in con.execute(
        "SELECT rows, digest FROM run_batches WHERE run_id = ? ORDER BY first_case",
        [run_id]).fetchall()]


@contextlib.contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """All of the block's writes, or none of them."""
    con.execute("BEGIN")
    try:
        yield
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def append(con: duckdb.DuckDBPyConnection, run_id: str, cases: pl.DataFrame,
           results: pl.DataFrame, tests: pl.DataFrame, outputs_hash: Callable[[], str | None],
           *, text: bool | Parts = True, digest: Callable[[], str | None] = lambda: None
           ) -> None:
    """One batch, in one transaction with its run_batches row: a batch is stored whole or
    not at all. The outputs' content hash is recorded with the first batch. The cases'
    output and vars are stored with `text`, else left to their source file (False) or
    written to the run's Parquet parts (store/cases.py)."""
    # Polars types Series.min() as any literal; an Int64 column's is an int
    first = int(cases["case_id"].min())  # type: ignore[arg-type]
    if isinstance(text, Parts):
        text.write(cases, first)
    if text is not True:
        cases = cases.with_columns(output=pl.lit(None, pl.String), vars=pl.lit(None, pl.String))
    with transaction(con):
        if isinstance(text, Parts):
            text.record(con, run_id)
        for table, frame, columns in (("case_rows", cases, CASE_COLUMNS),
                                      ("assertion_results", results, RESULT_COLUMNS),
                                      ("test_results", tests, TEST_COLUMNS)):
            batch = frame.select(  # noqa: F841  (read by DuckDB by name)
                pl.col(c).cast(pl.Categorical) if c in REPEATED else pl.col(c) for c in columns
            ).to_arrow()
            con.execute(f"INSERT INTO {table} BY NAME SELECT $run AS run_id, * FROM batch",
                        {"run": run_id})
        con.execute("INSERT INTO run_batches (run_id, batch, first_case, rows, digest) "
                    "SELECT $run, COUNT(*), $first, $rows, $digest FROM run_batches "
                    "WHERE run_id = $run",
                    {"run": run_id, "first": first, "rows": cases.height, "digest": digest()})
        con.execute("UPDATE runs SET outputs_hash = $hash WHERE run_id = $run "
                    "AND outputs_hash IS NULL", {"run": run_id, "hash": outputs_hash()})
    _let_go(con)


def _let_go(con: duckdb.DuckDBPyConnection) -> None:
    """A file database lets its written blocks go from memory once they pass WRITE_BUFFER
    (they are on disk): the limit lowered for a moment evicts them, in one flush of the
    allocator. (An in-memory database's blocks are its data, tagged IN_MEMORY_TABLE: they
    stay.)"""
    held = con.execute("SELECT COALESCE(SUM(memory_usage_bytes), 0) FROM duckdb_memory() "
                       "WHERE tag = 'BASE_TABLE'").fetchall()[0][0]
    if held > WRITE_BUFFER:
        try:  # down to a quarter of it, then the usual limit again
            con.execute(f"SET memory_limit = '{WRITE_BUFFER // 4 // 1024}KiB'")
        except duckdb.OutOfMemoryException:
            pass  # what is pinned now does not fit: the blocks go at a later batch
        finally:
            con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")


def finish_run(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """The run is finished: its case count recorded, and `cases` reads its parts."""
    con.execute("""
        UPDATE runs SET status = 'finished', finished_at = current_timestamp,
               cases = (SELECT COUNT(*) FROM case_rows WHERE run_id = $run)
        WHERE run_id = $run""", {"run": run_id})
    create_cases_view(con)


def fail_run(con: duckdb.DuckDBPyConnection, run_id: str, error: str,
             status: str = "failed", keep: bool = True) -> None:
    """Record the run as failed or interrupted, with its error. Its committed batches stay
    (a resume continues after them; readers never take it for a complete run), unless
    `keep` is False: bad input found while streaming, which no resume can go past (the
    fixed file is another file). Its judge answers stay in `judge_calls`, the cache."""
    with transaction(con):
        if not keep:
            drop_parts(con, run_id)
            for table in ("case_rows", "assertion_results", "test_results", "run_batches",
                          "named_metrics", "derived_metrics"):
                con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
        con.execute("UPDATE runs SET status = ?, finished_at = current_timestamp, error = ? "
                    "WHERE run_id = ?", [status, error, run_id])

"""Write a run into the results database, batch by batch, and compute its metrics in SQL."""

from __future__ import annotations

import json
import secrets
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from ..errors import InputError
from ..metrics.derived import derived_query
from ..spec.model import Suite
from .schema import migrate

# Low-cardinality strings go to DuckDB dictionary-encoded: about twice as fast to insert.
REPEATED = {"type", "metric", "status", "provider", "prompt", "test_id", "description",
            "output_kind"}
CASE_COLUMNS = ["case_id", "test_id", "test_index", "description", "provider", "prompt", "vars",
                "output", "output_kind", "latency_ms", "cost"]
RESULT_COLUMNS = ["case_id", "assertion_index", "type", "metric", "weight", "metric_only",
                  "status", "pass", "score", "reason", "parent_index", "named_scores"]
TEST_COLUMNS = ["case_id", "status", "pass", "score", "reason"]


MEMORY_LIMIT = "1GB"


def connect(path: str | Path, *, create: bool = True) -> duckdb.DuckDBPyConnection:
    """A connection to a results database, migrated to the current schema."""
    if not create and str(path) != ":memory:" and not Path(path).exists():
        raise InputError(f"{path}: results database not found")
    try:
        con = duckdb.connect(str(path))
    except duckdb.Error as e:
        raise InputError(f"{path}: cannot open: {str(e).splitlines()[0]}") from None
    # A bounded buffer: written blocks go to disk instead of piling up in memory.
    con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
    migrate(con)
    return con


def frame(con: duckdb.DuckDBPyConnection, query: str, params: list | dict | None = None
          ) -> pl.DataFrame:
    """A query's result as a Polars frame."""
    result = pl.from_arrow(con.sql(query, params=params).to_arrow_table())
    assert isinstance(result, pl.DataFrame)
    return result


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)


def start_run(con: duckdb.DuckDBPyConnection, suite: Suite, outputs: str | None,
              config: dict[str, Any]) -> str:
    run_id = new_run_id()
    con.execute(
        "INSERT INTO runs (run_id, started_at, status, suite_path, outputs_path, config, suite) "
        "VALUES (?, current_timestamp, 'running', ?, ?, ?, ?)",
        [run_id, suite.path, outputs, json.dumps(config), json.dumps(suite.to_json(), default=str)])
    rows = [(run_id, t.index, t.id or t.description, i, a.label, a.metric, a.weight,
             a.metric_only, json.dumps(a.to_json(), default=str))
            for t in suite.tests for i, a in enumerate(t.asserts)]
    if rows:
        con.executemany("INSERT INTO assertions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    return run_id


def resume_run(con: duckdb.DuckDBPyConnection, run_id: str) -> str:
    """Take up an interrupted run again: its partial results go, its id and judge calls stay."""
    row = con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchall()
    if not row:
        raise InputError(f"no run {run_id!r} in the database to resume")
    for table in ("cases", "assertion_results", "test_results", "named_metrics", "derived_metrics"):
        con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
    con.execute("UPDATE runs SET status = 'running', finished_at = NULL, error = NULL "
                "WHERE run_id = ?", [run_id])
    return run_id


def append(con: duckdb.DuckDBPyConnection, run_id: str, cases: pl.DataFrame,
           results: pl.DataFrame, tests: pl.DataFrame) -> None:
    for table, frame, columns in (("cases", cases, CASE_COLUMNS),
                                  ("assertion_results", results, RESULT_COLUMNS),
                                  ("test_results", tests, TEST_COLUMNS)):
        batch = frame.select(  # noqa: F841  (read by DuckDB by name)
            pl.col(c).cast(pl.Categorical) if c in REPEATED else pl.col(c) for c in columns
        ).to_arrow()
        con.execute(f"INSERT INTO {table} BY NAME SELECT $run AS run_id, * FROM batch",
                    {"run": run_id})


def finish_run(con: duckdb.DuckDBPyConnection, run_id: str, suite: Suite) -> None:
    """Named metrics (sums over cases, SPEC §3) and derived metrics, all in SQL."""
    con.execute("""
        INSERT INTO named_metrics
        SELECT a.run_id, c.provider, c.prompt, a.metric,
               SUM(a.score * CASE WHEN a.metric_only THEN 1 ELSE a.weight END),
               SUM(CASE WHEN a.metric_only THEN 1 ELSE a.weight END), COUNT(*)
        FROM (SELECT run_id, case_id, metric, score, weight, metric_only, status
              FROM assertion_results WHERE run_id = $run
              UNION ALL  -- each named score of a result (a GradingResult's namedScores)
              SELECT run_id, case_id, n.metric, n.score, weight, metric_only, status
              FROM (SELECT *, unnest(named_scores) AS n FROM assertion_results
                    WHERE run_id = $run AND named_scores IS NOT NULL)
              WHERE n.metric IS DISTINCT FROM metric) a
        JOIN cases c USING (run_id, case_id)
        WHERE a.metric IS NOT NULL AND a.status IN ('pass', 'fail')
        GROUP BY ALL""", {"run": run_id})
    if suite.derived_metrics:
        con.execute(f"INSERT INTO derived_metrics SELECT $run, * FROM ({derived_query(suite)})",
                    {"run": run_id})
    con.execute("""
        UPDATE runs SET status = 'finished', finished_at = current_timestamp,
               cases = (SELECT COUNT(*) FROM cases WHERE run_id = $run)
        WHERE run_id = $run""", {"run": run_id})


def fail_run(con: duckdb.DuckDBPyConnection, run_id: str, error: str,
             status: str = "failed") -> None:
    """Keep the run's record with its error and status (failed, or interrupted: resumable);
    drop its partial results, so a partial run never looks complete."""
    for table in ("cases", "assertion_results", "test_results", "named_metrics", "derived_metrics"):
        con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
    con.execute("UPDATE runs SET status = ?, finished_at = current_timestamp, error = ? "
                "WHERE run_id = ?", [status, error, run_id])

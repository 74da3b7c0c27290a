"""Export one run to Parquet: one file per public table, rows of that run only."""

from __future__ import annotations

from pathlib import Path

import duckdb

from ..errors import InputError

TABLES = ("runs", "assertions", "cases", "assertion_results", "test_results", "named_metrics",
          "derived_metrics", "judge_calls")


def export_run(con: duckdb.DuckDBPyConnection, run_id: str, directory: Path) -> list[Path]:
    """Write <table>.parquet for every table holding the run; return the paths written."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{directory}: cannot create: {e.strerror}") from None
    present = {r[0] for r in con.sql(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = current_schema() "
        "AND database_name = current_database()").fetchall()}
    written = []
    run = "'" + run_id.replace("'", "''") + "'"
    for table in TABLES:
        if table not in present:
            continue
        path = directory / f"{table}.parquet"
        target = "'" + str(path).replace("'", "''") + "'"
        con.execute(f"COPY (SELECT * FROM {table} WHERE run_id = {run}) TO {target} "
                    "(FORMAT parquet, COMPRESSION zstd)")
        written.append(path)
    return written

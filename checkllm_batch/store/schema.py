"""The results database: a versioned public schema, changed only through named migrations.

<<<<<<< HEAD
Public tables (columns may be added, never renamed): runs, cases, assertion_results,
test_results, named_metrics, derived_metrics. `assertions` keeps each assertion's spec.
A migration is SQL text or a function of the connection. Analysis views (store/views.py) are
re-created after any migration is applied, so they always match the tables present.
=======
Public tables (columns may be added, never renamed): runs, cases, assertion_results
(assert-set members carry `parent_index`), test_results, named_metrics, derived_metrics. `assertions` keeps each assertion's spec.
>>>>>>> 59af110 (Custom logic and other vocabularies: python (inline, file, batch), expression (DuckDB/Polars SQL), webhook, assert-set (parent_index via migration 0002), PromptKit checks and tool_calls)
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb

from .views import create_views

MIGRATIONS: list[tuple[str, str | Callable[[duckdb.DuckDBPyConnection], None]]] = [
    ("0001_initial", """
    CREATE TABLE runs (
        run_id VARCHAR PRIMARY KEY, started_at TIMESTAMP, finished_at TIMESTAMP,
        status VARCHAR, suite_path VARCHAR, outputs_path VARCHAR, config JSON, suite JSON,
        cases BIGINT, error VARCHAR);
    CREATE TABLE assertions (
        run_id VARCHAR, test_index INTEGER, test_id VARCHAR, assertion_index INTEGER,
        type VARCHAR, metric VARCHAR, weight DOUBLE, metric_only BOOLEAN, spec JSON);
    CREATE TABLE cases (
        run_id VARCHAR, case_id BIGINT, test_id VARCHAR, test_index INTEGER,
        description VARCHAR, provider VARCHAR, prompt VARCHAR, vars JSON, output VARCHAR,
        output_kind VARCHAR, latency_ms DOUBLE, cost DOUBLE);
    CREATE TABLE assertion_results (
        run_id VARCHAR, case_id BIGINT, assertion_index INTEGER, type VARCHAR,
        metric VARCHAR, weight DOUBLE, metric_only BOOLEAN, status VARCHAR, pass BOOLEAN,
        score DOUBLE, reason VARCHAR);
    CREATE TABLE test_results (
        run_id VARCHAR, case_id BIGINT, status VARCHAR, pass BOOLEAN, score DOUBLE,
        reason VARCHAR);
    CREATE TABLE named_metrics (
        run_id VARCHAR, provider VARCHAR, prompt VARCHAR, metric VARCHAR, sum DOUBLE,
        weight DOUBLE, count BIGINT);
    CREATE TABLE derived_metrics (
        run_id VARCHAR, provider VARCHAR, prompt VARCHAR, name VARCHAR, value DOUBLE);
    """),
    ("0002_analysis_views", create_views),
    # assert-set members get their own rows: parent_index = the set's assertion_index, and
    # assertion_index = the member's position in the set. Top-level rows: parent_index NULL.
    ("0003_assertion_parent_index", """
    ALTER TABLE assertion_results ADD COLUMN parent_index INTEGER;
    """),
]


def migrate(con: duckdb.DuckDBPyConnection) -> None:
    """Apply, in order, every migration this database has not seen yet."""
    con.execute("CREATE TABLE IF NOT EXISTS schema_migrations "
                "(name VARCHAR PRIMARY KEY, applied_at TIMESTAMP DEFAULT current_timestamp)")
    done = {r[0] for r in con.sql("SELECT name FROM schema_migrations").fetchall()}
    pending = [(name, ddl) for name, ddl in MIGRATIONS if name not in done]
    for name, ddl in pending:
        con.execute("BEGIN")
        ddl(con) if callable(ddl) else con.execute(ddl)
        con.execute("INSERT INTO schema_migrations (name) VALUES (?)", [name])
        con.execute("COMMIT")
    if pending:
        create_views(con)

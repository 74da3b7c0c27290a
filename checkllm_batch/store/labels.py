"""People's labels given after a run, and the samples of cases drawn for labelling: rows
into the `case_labels` and `label_samples` tables (migration 0012), one transaction each."""

from __future__ import annotations

import duckdb
import polars as pl

LABEL_COLUMNS = ["run_id", "case_id", "assertion_index", "label", "value", "labelled_by",
                 "source"]
SAMPLE_COLUMNS = ["run_id", "sample_id", "case_id", "stratum", "inclusion_prob", "sampled",
                  "strata_by", "seed"]


def _insert(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame,
            columns: list[str]) -> None:
    con.register("_rows_in", frame.select(columns).to_arrow())
    con.execute("BEGIN")
    try:
        con.execute(f"INSERT INTO {table} ({', '.join(columns)}) "
                    f"SELECT {', '.join(columns)} FROM _rows_in")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        con.unregister("_rows_in")


def write_labels(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame) -> None:
    """Append labels (LABEL_COLUMNS): a later label of the same case, assertion and name
    is the one read (judge_labels takes the last by labelled_at)."""
    _insert(con, "case_labels", frame, LABEL_COLUMNS)


def write_sample(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame) -> None:
    """Record a drawn sample (SAMPLE_COLUMNS): every candidate case, drawn or not."""
    _insert(con, "label_samples", frame, SAMPLE_COLUMNS)

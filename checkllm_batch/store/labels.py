"""People's labels given after a run, the samples of cases drawn for labelling, and the
labels frozen as an anchor set: rows into the `case_labels` and `label_samples` tables
(migration 0012) and `anchor_labels` (0016), one transaction each."""

from __future__ import annotations

import duckdb
import polars as pl

from .anchors import anchor_key_sql

LABEL_COLUMNS = ["run_id", "case_id", "assertion_index", "label", "value", "labelled_by",
                 "source"]
ANCHOR_COLUMNS = ["label", "anchor_key", "output_md5", "assertion_index", "value", "run_id",
                  "case_id", "labelled_by"]
SAMPLE_COLUMNS = ["run_id", "sample_id", "case_id", "stratum", "inclusion_prob", "sampled",
                  "strata_by", "seed"]


def _insert(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame,
            statements: list[str]) -> None:
    """Run the INSERT `statements` over the frame (as `_rows_in`) in one transaction."""
    con.register("_rows_in", frame.to_arrow())
    con.execute("BEGIN")
    try:
        for statement in statements:
            con.execute(statement)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        con.unregister("_rows_in")


def _copy(table: str, columns: list[str]) -> str:
    listed = ", ".join(columns)
    return f"INSERT INTO {table} ({listed}) SELECT {listed} FROM _rows_in"


def write_labels(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame,
                 anchor: bool = False) -> None:
    """Append labels (LABEL_COLUMNS): a later label of the same case, assertion and name
    is the one read (judge_labels takes the last by labelled_at). With `anchor`, freeze
    them too as an anchor set: each under its case's anchor key, computed from the case's
    output and vars (store/anchors.py)."""
    key = anchor_key_sql("c.output", "c.vars", "l.label")
    frozen = f"""
        INSERT INTO anchor_labels ({", ".join(ANCHOR_COLUMNS)})
        SELECT l.label, {key}, md5(COALESCE(c.output, '')), l.assertion_index, l.value,
               l.run_id, l.case_id, l.labelled_by
        FROM _rows_in l JOIN cases c USING (run_id, case_id)"""
    _insert(con, frame, [_copy("case_labels", LABEL_COLUMNS), *([frozen] if anchor else [])])


def write_sample(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame) -> None:
    """Record a drawn sample (SAMPLE_COLUMNS): every candidate case, drawn or not."""
    _insert(con, frame, [_copy("label_samples", SAMPLE_COLUMNS)])


"""Export one run to Parquet: one file per public table, rows of that run only."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import orjson
import polars as pl

from ..errors import InputError
from ..store.cases import refuse_unreadable

TABLES = ("runs", "assertions", "cases", "assertion_results", "test_results", "named_metrics",
          "derived_metrics", "judge_calls")


def export_run(con: duckdb.DuckDBPyConnection, run_id: str, directory: Path) -> list[Path]:
    """Write <table>.parquet for every table holding the run; return the paths written.
    A run whose cases' text is gone or damaged where it was left is refused, by name."""
    refuse_unreadable(con, run_id, f"cases: cannot export run {run_id}")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{directory}: cannot create: {e.strerror}") from None
    present = {r[0] for r in con.sql(  # `cases` is a view (store/cases.py)
        "SELECT table_name FROM information_schema.tables WHERE table_schema = "
        "current_schema() AND table_catalog = current_database()").fetchall()}
    written: list[Path] = []
    run = "'" + run_id.replace("'", "''") + "'"
    for table in TABLES:
        if table not in present:
            continue
        path = directory / f"{table}.parquet"
        target = "'" + str(path).replace("'", "''") + "'"
        try:  # e.g. `cases` of a run whose Parquet file is gone (store/cases.py)
            con.execute(f"COPY (SELECT * FROM {table} WHERE run_id = {run}) TO {target} "
                        "(FORMAT parquet, COMPRESSION zstd)")
        except duckdb.Error as e:
            for done in written:  # no export half written
                done.unlink()
            raise InputError(f"{table}: cannot export run {run_id}: "
                             f"{str(e).splitlines()[0]}") from None
        written.append(path)
    return written


RESULT_FORMATS = {".json": "json", ".jsonl": "jsonl", ".csv": "csv", ".parquet": "parquet",
                  ".html": "html"}
_CASES = """
    SELECT c.case_id, c.test_id, c.description, c.provider, c.prompt,
           json(c.vars)::VARCHAR AS vars, c.output,
           c.status, c.pass, c.score, c.reason, c.latency_ms, c.cost,
           list({type: a.type, metric: a.metric, status: a.status, score: a.score,
                 reason: a.reason} ORDER BY a.assertion_index)
               FILTER (a.assertion_index IS NOT NULL) AS assertions
    FROM case_results c LEFT JOIN assertion_results a
      ON a.run_id = c.run_id AND a.case_id = c.case_id AND a.parent_index IS NULL
    WHERE c.run_id = ? GROUP BY ALL ORDER BY c.case_id"""


def json_rows(frame: pl.DataFrame, columns: tuple[str, ...] = ("vars",)) -> list[dict]:
    """A frame's rows for a JSON document, the JSON text of `columns` (vars) embedded as
    the objects they are, never as strings of JSON."""
    rows = frame.to_dicts()
    for row in rows:  # serialising: orjson embeds each fragment as it is, unparsed
        for name in columns:
            if isinstance(row.get(name), str):
                row[name] = orjson.Fragment(row[name])
    return rows


def results_format(path: Path) -> str:
    """The format of `eval -o FILE`, checked before the run: its extension known, its folder
    one to write in (a typo must not cost a whole run first)."""
    fmt = RESULT_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"{path}: unknown results format {path.suffix!r}; use "
                         + ", ".join(RESULT_FORMATS))
    folder = path.resolve().parent
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise InputError(f"{path}: cannot write: {folder} is not a folder this user can write "
                         "in")
    return fmt


def write_results(results, run_id: str, path: Path) -> Path:
    """`eval -o FILE`, as promptfoo's: one row per case with its verdict and its
    assertions' results, in the format the extension names (.html: the report). `vars`
    is an object in JSON and JSON Lines, its compact JSON text in a CSV cell; numbers keep
    their full precision."""
    fmt = results_format(path)
    if fmt == "html":
        return results.report(path, run_id)
    frame = results.query(_CASES, [run_id])
    try:
        if fmt == "json":
            path.write_bytes(orjson.dumps({"run_id": run_id, "results": json_rows(frame)},
                                          option=orjson.OPT_INDENT_2, default=str))
        elif fmt == "jsonl":
            path.write_bytes(b"".join(orjson.dumps(row, default=str) + b"\n"
                                      for row in json_rows(frame)))
        elif fmt == "csv":
            frame.with_columns(pl.col("assertions").list.eval(
                pl.element().struct.json_encode()).list.join("\n")).write_csv(path)
        else:
            frame.write_parquet(path)
    except OSError as e:
        raise InputError(f"{path}: cannot write: {e.strerror}") from None
    return path

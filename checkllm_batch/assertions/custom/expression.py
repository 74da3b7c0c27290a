"""How the `expression` type (custom.py) runs: a vectorised custom check, as a DuckDB SQL or a Polars SQL expression.

The expression reads the case's columns (`output`, `prompt`, `provider`, `latency_ms`,
`cost`, `tool_calls`, `vars` as a struct and every var as its own column) and returns a
boolean (the verdict) or a number (a score; it passes when >= threshold, or > 0 without
one). It runs once per batch: DuckDB queries the batch's Arrow data directly, Polars
evaluates `pl.sql_expr`. Syntax errors are parse-time errors; a column that does not exist
is only known per batch and makes that batch's rows `error`.
"""

from __future__ import annotations

from typing import Any

import duckdb
import polars as pl

from ..batch import caseframe

ENGINES = ("duckdb", "polars")
RESULT = {"r": pl.Float64, "is_bool": pl.Boolean, "error": pl.String}


def check_expression(value: Any, spec: Any) -> str:
    """Parse-time check: one expression, valid syntax for its engine."""
    engine = (spec.args.get("engine") if spec is not None else None) or "duckdb"
    if engine not in ENGINES:
        raise ValueError(f'engine must be "duckdb" or "polars", got {engine!r}')
    if not isinstance(value, str) or not value.strip():
        raise ValueError("value must be an expression (DuckDB SQL or Polars SQL)")
    try:
        if engine == "polars":
            pl.sql_expr(value)
        else:
            statements = duckdb.connect().extract_statements(f"SELECT ({value}) AS r")
            if len(statements) != 1:
                raise ValueError("a single expression is expected, not several statements")
    except (duckdb.Error, pl.exceptions.PolarsError) as e:
        raise ValueError(f"invalid {engine} expression: {str(e).splitlines()[0]}") from None
    return engine


def evaluate(engine: str, expression: str, frame: pl.DataFrame) -> pl.Series:
    """The expression's value on every row of `frame` (a Polars Series)."""
    if engine == "polars":
        return frame.select(pl.sql_expr(expression).alias("r")).to_series()
    con = duckdb.connect()
    try:
        con.register("cases", frame.to_arrow())
        table = con.sql(f"SELECT ({expression}) AS r FROM cases").to_arrow_table()
    finally:
        con.close()
    return pl.from_arrow(table).to_series()  # type: ignore[union-attr]


def run_expression(engine: str, expression: str, rows: pl.Series) -> pl.Series:
    frame = caseframe.case_frame(rows)
    try:
        values = evaluate(engine, expression, frame)
        if values.dtype != pl.Boolean and not values.dtype.is_numeric():
            raise TypeError(f"must return a boolean or a number, got {values.dtype}")
    except Exception as e:  # noqa: BLE001  (a bad column or type: this batch's rows are errors)
        message = f"expression failed: {str(e).splitlines()[0]}"
        return pl.DataFrame({"r": [None] * frame.height, "is_bool": [False] * frame.height,
                             "error": [message] * frame.height}, schema=RESULT).to_struct()
    return pl.DataFrame({"r": values.cast(pl.Float64)}).select(
        "r", is_bool=pl.lit(values.dtype == pl.Boolean),
        error=pl.when(pl.col("r").is_null()).then(pl.lit("expression returned NULL"))).to_struct()

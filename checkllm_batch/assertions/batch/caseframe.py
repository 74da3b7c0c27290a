"""The cases of a batch as user code sees them (`python` batch functions, `expression`, `webhook`).

Types that run user logic need more than the output: the case's vars, prompt, provider,
tool calls. They take `all_columns()` (one struct of every column of the cases frame) and
turn it back into a frame with `case_frame`: the core columns, `vars` as a struct, and each
var as its own column (unless its name is a core column's, e.g. a var named `output`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson
import polars as pl

from ...js import template

if TYPE_CHECKING:
    from polars._typing import PolarsDataType  # pl.String or pl.List(pl.String)

CORE = ("output", "output_kind", "provider", "prompt", "latency_ms", "cost", "test_id",
        "description", "tool_calls")
# What identifies a case for user code: equal keys give equal results, so it runs once.
SCRIPT = "__script"  # a templated script's rendering, when it has one
KEY = ("output", "output_kind", "vars", "prompt", "provider", "test_id", "description",
       "tool_calls", SCRIPT)


def all_columns() -> pl.Expr:
    return pl.struct(pl.all())


def case_frame(rows: pl.Series) -> pl.DataFrame:
    """The struct of all columns as a frame of the columns user code may read."""
    df = rows.struct.unnest()
    frame = df.select([c for c in CORE if c in df.columns])
    if "vars" not in df.columns:
        return frame
    try:  # one type per var for the batch: the supertype Polars infers over all rows
        decoded = df["vars"].str.json_decode(infer_schema_length=None)
    except pl.exceptions.PolarsError:
        return frame.with_columns(df["vars"])  # undecodable together: the JSON text
    if not isinstance(decoded.dtype, pl.Struct):  # no rows, or no object to read vars from
        return frame.with_columns(df["vars"])
    fields = [f.name for f in decoded.dtype.fields]
    if not fields:
        return frame
    own = [name for name in fields if name not in CORE]
    return frame.with_columns(decoded.alias("vars"),
                              *(decoded.struct.field(name) for name in own))


def keys(rows: pl.Series) -> pl.DataFrame:
    df = rows.struct.unnest()
    return df.select([c for c in KEY if c in df.columns])


def output_value(output: str | None, kind: str | None) -> Any:
    """The output as promptfoo hands it to scripts: text, or the parsed JSON value."""
    if output is not None and kind == "json":
        return orjson.loads(output)
    return output


def context(row: dict[str, Any], config: Any = None) -> dict[str, Any]:
    """promptfoo's script context (`context`: vars, prompt, test, config, ...) for one case.
    `vars` are the vars as promptfoo processes them before grading, as our templates see them
    (`template.resolve_vars`: one trailing newline cut from each string var, `{{other}}`
    references resolved); the test carries them as written."""
    written = orjson.loads(row["vars"]) if row.get("vars") else {}
    return {
        "prompt": row.get("prompt"),
        "vars": template.resolve_vars(written),
        "test": {"id": row.get("test_id"), "description": row.get("description"),
                 "vars": written},
        "provider": {"id": row.get("provider")},
        "tool_calls": orjson.loads(row["tool_calls"]) if row.get("tool_calls") else None,
        "config": config,
    }


def over_keys(rows: pl.Series, run: Any, schema: Mapping[str, PolarsDataType]) -> pl.Series:
    """Call `run(list_of_distinct_key_rows) -> dict of columns` once per distinct case key and
    join the results back to every row, as a struct Series with `schema`."""
    k = keys(rows)
    uniq = k.unique(maintain_order=True)
    columns = run(uniq.to_dicts())
    table = uniq.with_columns(pl.Series(name, values, dtype=schema[name])
                              for name, values in columns.items())
    joined = k.join(table, on=list(k.columns), how="left", nulls_equal=True,
                    maintain_order="left")
    return joined.select(pl.struct(list(schema))).to_series()

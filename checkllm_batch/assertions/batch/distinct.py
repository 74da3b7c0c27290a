"""The one flagged row-wise fallback: run a Python check once per distinct value of a batch.

Some checks need a library to look at each value (a JSON parser, a schema validator, a
backtracking regex engine). They run here, over the *distinct* values of the batch only,
and are joined back to the rows, so repeated outputs cost nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

Outcome = tuple[bool | None, str | None]  # (passed, detail); passed None means error
OUTCOME = pl.Struct({"ok": pl.Boolean, "detail": pl.String})


def over_distinct(expr: pl.Expr, check: Callable[[Any], Outcome],
                  run_all: Callable[[list], list[Outcome]] | None = None) -> pl.Expr:
    """A struct {ok, detail} per row, calling `check` once per distinct value of `expr`.
    Wrap the result in `ctx.once(...)` so that the batch is checked once. `run_all`, if
    given, checks the list of distinct values itself (e.g. on a worker pool)."""

    def checked(uniq: pl.Series) -> pl.DataFrame:
        values = uniq.to_list()
        outcomes = (run_all(values) if run_all
                    else [check(v) for v in values])  # per-distinct: a library looks at each
        return pl.DataFrame({"ok": [o[0] for o in outcomes], "detail": [o[1] for o in outcomes]},
                            schema={"ok": pl.Boolean, "detail": pl.String})

    return expr.map_batches(lambda values: per_distinct(values, checked).to_struct(),
                            return_dtype=OUTCOME)


def text_of_distinct(expr: pl.Expr, fn: Callable[[Any], str]) -> pl.Expr:
    """`fn(value)` as text on each row (null stays null), called once per distinct value."""

    def printed(uniq: pl.Series) -> pl.DataFrame:
        texts = [None if v is None else fn(v) for v in uniq.to_list()]  # per-distinct: a
        # printing rule Polars has no expression for (JavaScript's toFixed and String())
        return pl.DataFrame({"t": texts}, schema={"t": pl.String})

    return expr.map_batches(lambda values: per_distinct(values, printed).to_series(),
                            return_dtype=pl.String)


def per_distinct(values: pl.Series, fn: Callable[[pl.Series], pl.DataFrame]) -> pl.DataFrame:
    """`fn` over the distinct values of `values` (a frame with a row per distinct value),
    joined back to every row in order. De-duplicated on a 64-bit hash of the value: joining
    on u64 is far cheaper than on long strings; a collision needs ~4e9 distinct values in
    one batch to be likely."""
    if values.null_count() == len(values):  # nothing to check here: fn's answer for null
        return fn(values.head(1)).select(pl.all().gather(pl.repeat(0, len(values))))
    hashes = _hashes(values)
    first = hashes.is_first_distinct()
    table = fn(values.filter(first)).with_columns(__h=hashes.filter(first))
    return (hashes.to_frame("__h").join(table, on="__h", how="left", maintain_order="left")
            .drop("__h"))


_MIX = np.uint64(0x9E3779B97F4A7C15)  # an odd constant: each field's hash lands elsewhere


def _hashes(values: pl.Series) -> pl.Series:
    """A 64-bit hash of each value. A struct of texts (an output and a value), none of it null
    (a null struct would hash as its null fields), is hashed field by field and mixed:
    hashing the struct whole encodes its rows into one buffer first, 3x the cost on
    500-character texts."""
    if not (isinstance(values.dtype, pl.Struct) and values.null_count() == 0
            and all(f.dtype == pl.String for f in values.dtype.fields)):
        return values.hash()
    mixed = np.zeros(len(values), dtype=np.uint64)
    for field in values.struct.fields:
        mixed = mixed * _MIX ^ values.struct.field(field).hash().to_numpy()
    return pl.Series(mixed)

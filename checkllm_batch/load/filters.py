"""promptfoo's test filters on the rows to evaluate: `--filter-pattern` (a regex over the
test's description), `--filter-first-n`, `--filter-sample`, applied in that order, as
promptfoo applies them. The rows are streamed; only the rows kept are held in memory."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterator

import numpy as np
import polars as pl
import pyarrow as pa

from ..errors import InputError
from ..suites.model import Suite


@dataclass(frozen=True)
class Filters:
    pattern: str | None = None  # regex (Rust syntax) searched in the test's description
    first_n: int | None = None
    sample: int | None = None
    seed: int = 0

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.pattern, self.first_n, self.sample))

    def record(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


def apply(filters: Filters, suite: Suite, batches: Iterator[pa.RecordBatch]) -> pa.Table:
    """The rows of `batches` that pass the filters, as one table (in their order)."""
    kept: list[pl.DataFrame] = []
    count, offset = 0, 0
    # one key per row, drawn in the rows' order from one stream: the sample does not depend
    # on how the rows are cut into batches (`--batch-rows`)
    keys = np.random.default_rng(filters.seed)
    marked: dict[str, dict] = {}  # field metadata Polars drops (a JSON file's JSON vars)
    for batch in batches:
        marked |= {f.name: f.metadata for f in batch.schema if f.metadata}
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        frame = frame.with_row_index("__row", offset)
        offset += frame.height
        if filters.sample is not None:
            frame = frame.with_columns(__key=pl.Series(keys.random(frame.height)))
        if filters.pattern is not None:
            frame = frame.filter(_matches(frame, suite, filters.pattern))
        if filters.first_n is not None:
            frame = frame.head(max(filters.first_n - count, 0))
        count += frame.height
        kept.append(frame)
        if filters.sample is not None:
            kept = [pl.concat(kept, how="diagonal_relaxed").sort("__key").head(filters.sample)]
        if filters.first_n is not None and count >= filters.first_n:
            break
    rows = pl.concat(kept, how="diagonal_relaxed") if kept else pl.DataFrame()
    table = rows.sort("__row").drop("__row", "__key", strict=False).to_arrow()
    return pa.Table.from_arrays(table.columns, schema=pa.schema(
        [f.with_metadata(marked[f.name]) if f.name in marked else f for f in table.schema]))


def _matches(frame: pl.DataFrame, suite: Suite, pattern: str) -> pl.Series:
    """The description of each row's test: its test's (by test_id or __test_index), else
    the row's own `description` or `test_id`."""
    by_name = {n: t.description or t.id or "" for t in suite.tests for n in (t.id, t.description)
               if n is not None}
    by_index = {t.index: t.description or t.id or "" for t in suite.tests}
    names = []
    if "__test_index" in frame.columns:
        names.append(pl.col("__test_index").replace_strict(by_index, default=None,
                                                           return_dtype=pl.String))
    if "test_id" in frame.columns:
        tid = pl.col("test_id").cast(pl.String)
        names.append(tid.replace_strict(by_name, default=None, return_dtype=pl.String))
        names.append(tid)
    if "description" in frame.columns:
        names.append(pl.col("description").cast(pl.String))
    if not suite.inline_tests or len(suite.tests) == 1:
        names.append(pl.lit(suite.tests[0].description or "" if suite.tests else ""))
    try:
        return frame.select(pl.coalesce(*names, pl.lit("")).str.contains(pattern)
                            .fill_null(False)).to_series()
    except pl.exceptions.PolarsError as e:
        raise InputError(f"--filter-pattern {pattern!r}: {str(e).splitlines()[0]}") from None

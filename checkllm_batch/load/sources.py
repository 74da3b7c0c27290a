"""What `cb.evaluate` may be given as outputs (a file, a DuckDB table, a frame, a stream, or
the suite's inline outputs), as one stream of batches: the single place an outputs value
becomes (its name, its batches, its rows if known, what identifies its content)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import orjson
import pyarrow as pa

from ..errors import InputError
from ..suites.model import Suite
from .frames import frame_source
from .outputs import read_batches, row_count
from .stream import read_ahead, rechunk

# a path, or any dataframe load/frames.py reads (pandas, Polars, Arrow, DuckDB, ...)
Outputs = str | Path | Any


def open_outputs(suite: Suite, outputs: Outputs, rows: int, config: dict[str, Any] | None = None
                 ) -> tuple[str, Iterator[pa.RecordBatch], int | None, str | None]:
    """(the source's name, its batches, its rows if known, the file that identifies its
    content, or None for a stream not read from a file named in `config`: a stream is
    hashed batch by batch, load/fingerprint.py)."""
    if outputs is not None and not isinstance(outputs, (str, Path)):  # a dataframe
        name, batches, total = frame_source(outputs, rows)
        return name, batches, total, (config or {}).get("outputs")  # the CLI's filtered
        # rows: their file's
    if outputs is not None:
        source = str(outputs)
        return source, read_ahead(read_batches(source, rows)), row_count(source), source
    table = inline_outputs(suite)
    return suite.path, rechunk(table.to_batches(), rows), table.num_rows, None


def inline_outputs(suite: Suite) -> pa.Table:
    """The outputs written in the suite itself (`providerOutput` / `output` per test)."""
    missing = [t.name for t in suite.tests if t.output is None]
    if missing or not suite.inline_tests:
        raise InputError(f"{suite.path}: {'test ' + repr(missing[0]) if missing else 'the suite'}"
                         " has no inline output (providerOutput); pass --outputs")
    rows = [{"__test_index": t.index,
             "output": t.output if isinstance(t.output, str) else orjson.dumps(t.output).decode(),
             "output_kind": "text" if isinstance(t.output, str) else "json"}
            for t in suite.tests]
    return pa.Table.from_pylist(rows)


def check_apart(outputs: Outputs, db: str | Path) -> None:
    """Outputs read from a table of the results database itself would be a second, read-only
    connection to the file the run writes, in the same process: DuckDB refuses it, and may
    abort the process on the way out."""
    if not (isinstance(outputs, (str, Path)) and str(outputs).startswith("duckdb:")
            and isinstance(db, (str, Path)) and str(db) != ":memory:"):
        return
    path = str(outputs).split(":", 2)[1]
    if Path(path).resolve() == Path(db).resolve():
        raise InputError(f"the outputs table is in the results database {db}; copy it to "
                         "another file or write the results to another database (--db)")

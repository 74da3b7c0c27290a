"""What identifies an outputs dataset's content: a resumed run must score the same rows.

A file is hashed whole (its bytes; a DuckDB source: the database file). A dataframe or any
other stream is hashed batch by batch as the run reads it (`batch_digest`, stored with each
committed batch): no second pass over it. A resume reads the committed rows again anyway (a
stream starts at its beginning), so `skip_checked` hashes them at the committed batches'
boundaries, whatever batch size the resume uses, and refuses other content by the first
batch that differs, or by its row count.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from itertools import chain
from pathlib import Path

import pyarrow as pa

from ..errors import InputError


def fingerprint(outputs: str | None) -> str | None:
    """The content hash of an outputs file (a DuckDB source: the database file); None for
    a stream, which is hashed batch by batch instead."""
    if outputs is None:
        return None
    path = Path(outputs.split(":", 2)[1] if outputs.startswith("duckdb:") else outputs)
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


class _Sink:
    """A write-only file that hashes what is written to it."""

    closed = False

    def __init__(self) -> None:
        self.hash = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        return len(data)

    def flush(self) -> None:
        pass


def batch_digest(rows: Sequence[pa.RecordBatch]) -> str:
    """The sha256 of rows' Arrow IPC stream, the same however they are chunked or sliced
    (re-laid into fresh arrays first) and whatever the schema's metadata says."""
    table = pa.Table.from_batches(rows) if rows else None
    if table is None:
        return hashlib.sha256().hexdigest()
    plain = pa.schema([f.with_type(_plain(f.type)) for f in table.schema])
    fresh = pa.concat_tables([table.slice(0, 0), table]).cast(plain).combine_chunks()
    sink = _Sink()
    with pa.ipc.new_stream(pa.PythonFile(sink, mode="w"),  # type: ignore[arg-type]
                           fresh.schema) as writer:
        writer.write_table(fresh)
    return sink.hash.hexdigest()


def _plain(kind: pa.DataType) -> pa.DataType:
    """A view type as its plain kind (a view's buffers may hold other rows' text)."""
    if pa.types.is_string_view(kind):
        return pa.large_string()
    if pa.types.is_binary_view(kind):
        return pa.large_binary()
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        of = _plain(kind.value_type)
        return pa.list_(of) if pa.types.is_list(kind) else pa.large_list(of)
    if pa.types.is_struct(kind):
        return pa.struct([f.with_type(_plain(f.type)) for f in kind])
    return kind


def skip_checked(batches: Iterator[pa.RecordBatch], committed: Sequence[tuple[int, str | None]],
                 run_id: str) -> Iterator[pa.RecordBatch]:
    """The batches after a resumed run's committed rows, each committed batch's rows
    (`committed`: rows, digest) read now and checked against its digest; an InputError if
    the outputs are shorter or differ, before the run is taken up."""
    held: list[pa.RecordBatch] = []
    done = 0
    for index, (rows, digest) in enumerate(committed, 1):
        part, held = _take(batches, held, rows)
        got = sum(b.num_rows for b in part)
        if got < rows:
            raise InputError(f"run {run_id} ran on other outputs: these have {done + got} "
                             f"rows, and it had committed {sum(r for r, _ in committed)}; "
                             "resume it with the outputs it ran on, or leave out --resume")
        if digest is not None and batch_digest(part) != digest:
            raise InputError(f"run {run_id} ran on other outputs: its batch {index} (rows "
                             f"{done}-{done + rows - 1}) differs; resume it with the outputs "
                             "it ran on, or leave out --resume to start a new run")
        done += rows
    return chain(held, batches)


def _take(batches: Iterator[pa.RecordBatch], held: list[pa.RecordBatch], rows: int
          ) -> tuple[list[pa.RecordBatch], list[pa.RecordBatch]]:
    """(the next `rows` rows, what is read past them)."""
    taken: list[pa.RecordBatch] = []
    count = 0
    for batch in chain(held, batches):
        if count + batch.num_rows > rows:
            cut = rows - count
            return taken + [batch.slice(0, cut)], [batch.slice(cut)]
        taken.append(batch)
        count += batch.num_rows
        if count == rows:
            return taken, []
    return taken, []

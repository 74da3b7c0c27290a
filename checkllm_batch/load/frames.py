"""Outputs given as a dataframe, read as Arrow record batches: pandas, Polars (eager or
lazy), PyArrow (Table, RecordBatchReader, Dataset), a DuckDB relation, a Hugging Face
`datasets.Dataset`, or any object with `__arrow_c_stream__` (the Arrow PyCapsule interface).

None of those libraries is imported here, and none is a dependency: a frame is read through
the C stream interface, except where that would build the whole frame at once (pandas
converts itself whole; a LazyFrame, a PyArrow Dataset and a Hugging Face Dataset have no
stream of their own): those are read `rows` at a time through their own batch methods. Each
batch is checked as a file's is (reserved names, dictionary columns decoded, bytes as text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, NamedTuple

import pyarrow as pa

from ..errors import InputError
from .columns import check_columns, checked
from .stream import rechunk

FRAMES = ("a pandas or Polars DataFrame, a Polars LazyFrame, a PyArrow Table, "
          "RecordBatchReader or Dataset, a DuckDB relation, a Hugging Face datasets.Dataset, "
          "or any object with __arrow_c_stream__")
ACCEPTED = f"a path (.jsonl, .csv, .parquet, .arrow or duckdb:file.duckdb:table), {FRAMES}"


class FrameSource(NamedTuple):
    name: str  # for messages and the run's outputs_path: "<pandas.DataFrame>"
    batches: Iterator[pa.RecordBatch]
    total: int | None  # rows, when the frame knows them without being read


@dataclass
class Keep:
    """A frame whose batches, as read (before any check), are kept in `batches`: `cb.score`
    returns the rows it scored of a source it cannot read twice (a reader, a lazy query)."""

    frame: Any
    batches: list[pa.RecordBatch] = field(default_factory=list)


@dataclass
class ReadBatches:
    """Batches our own file readers made (the CLI's filtered rows): checked already, with
    the engine's own output_kind column, so not a user's frame to check again."""

    reader: pa.RecordBatchReader


def frame_source(frame: Any, rows: int) -> FrameSource:
    """The frame's batches of at most `rows` rows, checked; InputError for an object that is
    not a frame, naming its type and what is accepted."""
    if isinstance(frame, ReadBatches):
        return FrameSource("<table>", rechunk(frame.reader, rows), None)
    keep = frame.batches if isinstance(frame, Keep) else None
    frame = frame.frame if isinstance(frame, Keep) else frame
    name = f"<{kind(frame)}>"
    raw, total = _stream(frame, rows, name)
    if keep is not None:
        raw = _kept(raw, keep)
    batches = (checked(b, name) for b in raw)
    return FrameSource(name, rechunk(batches, rows), total)


def kind(frame: Any) -> str:
    """The frame's library and class, as users write them: "polars.LazyFrame" ("dict")."""
    library = type(frame).__module__.split(".")[0]
    return type(frame).__qualname__ if library == "builtins" else \
        f"{library}.{type(frame).__qualname__}"


def is_frame(frame: Any, library: str, name: str | None = None) -> bool:
    """Whether `frame` is of `library` (and class `name`), without importing the library."""
    lib, _, cls = kind(frame).partition(".")
    return lib == library and name in (None, cls)


def _stream(frame: Any, rows: int, name: str) -> tuple[Iterable[pa.RecordBatch], int | None]:
    """The frame's raw batches and its row count if known, by what the frame offers."""
    if is_frame(frame, "pandas", "DataFrame"):
        check_columns([str(c) for c in frame.columns], name)
        return _pandas(frame, rows, name), len(frame)
    if is_frame(frame, "polars", "LazyFrame"):
        return _lazy(frame, rows), None
    if is_frame(frame, "pyarrow") and _is_dataset(frame):
        return frame.to_batches(batch_size=rows), None
    if is_frame(frame, "datasets", "Dataset"):  # its rows as its indices (select, filter) say
        tables = frame.with_format("arrow").iter(batch_size=rows)
        return (b for t in tables for b in t.to_batches()), len(frame)
    if hasattr(frame, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(frame), _known_rows(frame)
    raise InputError(f"outputs: a {kind(frame)} is neither a path nor a dataframe; pass "
                     f"{ACCEPTED}")


def _is_dataset(frame: Any) -> bool:
    """A PyArrow Dataset: pyarrow.dataset is imported only for a PyArrow frame (it takes
    longer to import than the rest of a run's start, pandas with it when installed)."""
    import pyarrow.dataset as pads

    return isinstance(frame, pads.Dataset)


def _pandas(frame: Any, rows: int, name: str) -> Iterator[pa.RecordBatch]:
    """`rows` at a time: pandas' own stream converts the whole frame first (twice the
    memory). Its index is not a column: cb.score gives it back on the returned frame."""
    for start in range(0, len(frame), rows):
        try:
            table = pa.Table.from_pandas(frame.iloc[start:start + rows], preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
            raise InputError(f"{name}: rows {start + 1}-{min(start + rows, len(frame))}: cannot be read as "
                             f"Arrow: {str(e).splitlines()[0]}") from None
        yield from table.to_batches()


def _lazy(frame: Any, rows: int) -> Iterator[pa.RecordBatch]:
    """A Polars query, `rows` at a time, never collected whole. Its streaming engine decodes
    ahead of a consumer as slow as scoring, whatever the batch method (pola-rs/polars#28569:
    a 1M-row scan held 1.3 GB): a query Polars can slice at its scans is read one slice at a
    time instead, each read alone; any other through collect_batches (Polars before 1.32
    has none: then collected by its streaming engine)."""
    if _sliced_at_scans(frame, rows):
        offset = 0
        while True:
            part = frame.slice(offset, rows).collect(engine="streaming")
            yield from part.to_arrow().to_batches()
            offset += part.height
            if part.height < rows:
                return
    if not hasattr(frame, "collect_batches"):
        yield from frame.collect(engine="streaming").to_arrow().to_batches()
        return
    for part in frame.collect_batches(chunk_size=rows):
        yield from part.to_arrow().to_batches()


def _sliced_at_scans(frame: Any, rows: int) -> bool:
    """Whether Polars' plan for a slice of `frame` reads only that slice: pushed into its
    Parquet or IPC scans (`SLICE: Positive` there; a CSV or JSON scan reads every line
    before the slice), with no slice of its own left above a filter, join or sort
    (`SLICE[`), which would read every row before it again for each slice."""
    plan = frame.slice(0, rows).explain()
    scans = set(re.findall(r"(\w+) SCAN \[", plan))
    return bool(scans) and scans <= {"Parquet", "Ipc"} and "SLICE: Positive" in plan \
        and "SLICE[" not in plan


def _known_rows(frame: Any) -> int | None:
    if isinstance(frame, pa.Table):
        return frame.num_rows
    return frame.height if is_frame(frame, "polars", "DataFrame") else None


def _kept(batches: Iterable[pa.RecordBatch], into: list[pa.RecordBatch]
          ) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        into.append(batch)
        yield batch

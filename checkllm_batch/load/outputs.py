"""Read an outputs dataset as a stream of Arrow record batches: which reader a source takes.

JSONL, CSV, Parquet, Arrow IPC, a DuckDB table (`duckdb:path.duckdb:table`), or promptfoo's
results file (`promptfoo eval -o results.json` / `.jsonl`, see promptfoo.py). Readers
stream, so memory depends on the batch size, not on the number of rows (a promptfoo
results.json is one JSON document, read whole). JSON rows are typed in json_rows.py, batches
cut and read ahead in stream.py, names and text checked in columns.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from ..errors import InputError
from . import stream
from .columns import checked
from .json_rows import is_json_document, json_document, jsonl, jsonl_records
from .stream import rechunk

FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv",
           ".parquet": "parquet", ".arrow": "arrow", ".ipc": "arrow", ".feather": "arrow"}


def read_batches(source: str, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """Record batches of at most `batch_rows` rows and about BATCH_BYTES from `source`."""
    return rechunk(_read(source, batch_rows), batch_rows)


def _read(source: str, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """The source's batches as its reader cuts them, their names and text checked."""
    if source.startswith("duckdb:"):
        yield from _duckdb(source, batch_rows)
        return
    path = Path(source)
    if not path.exists():
        raise InputError(f"{source}: outputs file not found")
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"{source}: unknown outputs format {path.suffix!r}; use "
                         ".jsonl, .csv, .parquet, .arrow or duckdb:file.duckdb:table")
    try:
        if fmt in ("csv", "jsonl"):
            _refuse_utf16(path, source)
        if fmt == "parquet":
            # no pre-buffering: it keeps every row group read so far in Arrow's memory, so a
            # run's memory grew with the file (1.5M rows: +430 MiB); without it, one at a time
            file = pq.ParquetFile(path, pre_buffer=False)
            batches = file.iter_batches(batch_size=_parquet_rows(file.metadata, batch_rows))
        elif fmt == "arrow":
            batches = _ipc_batches(path)
        elif fmt == "csv":
            batches = _csv_text(path)
        else:  # JSON: names checked as records are read, before output_kind is added
            json_batches = (json_document(path, batch_rows) if is_json_document(path)
                            else jsonl(path, batch_rows))  # promptfoo's results file, or lines
            yield from (checked(b, source, names=False) for b in json_batches)
            return
        yield from (checked(b, source) for b in batches)
    except (pa.ArrowException, OSError) as e:
        raise InputError(f"{source}: cannot read: {str(e).splitlines()[0]}") from None
    except UnicodeDecodeError:  # a CSV header (names) in another encoding
        raise InputError(f"{source}: column names are not UTF-8 text; save the file as "
                         "UTF-8") from None


def _csv_text(path: Path) -> Iterator[pa.RecordBatch]:
    """A CSV's rows with every cell as written, as promptfoo reads it and as a tests CSV is
    read: nothing is taken for a number, a boolean or a null (`007` stays "007", an empty
    cell is "" but in UNRECORDED), and a column of numbers may hold text further down. Cells
    are read as bytes, so `checked` names a column that is not UTF-8."""
    names = pacsv.open_csv(path).schema.names  # the header; the first block's types unused
    types = pacsv.ConvertOptions(column_types=dict.fromkeys(names, pa.binary()))
    return (_unrecorded(b) for b in pacsv.open_csv(path, convert_options=types))


# columns of what a provider recorded: an empty CSV cell there is null, nothing recorded (an
# empty `tool_calls` is no calls, an empty `prompt` leaves the test's own)
UNRECORDED = ("provider", "prompt", "finish_reason", "logprobs", "tool_calls", "tools",
              "metadata")


def _unrecorded(batch: pa.RecordBatch) -> pa.RecordBatch:
    for name in UNRECORDED:
        if (i := batch.schema.get_field_index(name)) >= 0:
            cells = batch.column(i)
            empty = pc.equal(cells, pa.scalar(b"", cells.type))
            cells = pc.if_else(empty, pa.scalar(None, cells.type), cells)
            batch = batch.set_column(i, name, cells)
    return batch


def _refuse_utf16(path: Path, source: str) -> None:
    """A text file saved as UTF-16 (Excel's "Unicode text") reads as UTF-8 with a NUL
    after each character: say so, not what the parser makes of it."""
    with path.open("rb") as f:
        if f.read(2) in (b"\xff\xfe", b"\xfe\xff"):
            raise InputError(f"{source}: UTF-16 text; save the file as UTF-8")


def first_names(source: str) -> list[str]:
    """The columns of a dataset's first rows, without reading the rest of it (of a JSONL
    file, its first line's keys: json_rows' whole-file pass is not needed for names)."""
    path = Path(source)
    if FORMATS.get(path.suffix.lower()) == "jsonl" and not is_json_document(path):
        return list(next(jsonl_records(path), {}))
    return next(read_batches(source, 1)).schema.names


def row_count(source: str) -> int | None:
    """The number of rows, when the format says it without reading them (Parquet)."""
    if not source.endswith(".parquet") or not Path(source).exists():
        return None
    try:
        return pq.ParquetFile(source).metadata.num_rows
    except (pa.ArrowException, OSError):
        return None  # reading it says what is wrong


def _ipc_batches(path: Path) -> Iterator[pa.RecordBatch]:
    try:
        reader = ipc.open_file(str(path))
        yield from (reader.get_batch(i) for i in range(reader.num_record_batches))
    except pa.ArrowInvalid:
        # pyarrow opens a path here too; its stubs list only buffers and files
        yield from ipc.open_stream(str(path))  # type: ignore[arg-type]


def _parquet_rows(meta: pq.FileMetaData, rows: int) -> int:
    """Rows per read that decode to about BATCH_BYTES, from the row groups' sizes: the read
    itself stays within the budget, not only the batches cut from it."""
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    return max(1, min(rows, meta.num_rows * stream.BATCH_BYTES // max(size, 1)))


def _duckdb(source: str, rows: int) -> Iterator[pa.RecordBatch]:
    try:
        _, path, table = source.split(":", 2)
    except ValueError:
        raise InputError(f"{source}: write duckdb:path.duckdb:table") from None
    if not Path(path).exists():
        raise InputError(f"{path}: database not found")
    with duckdb.connect(path, read_only=True) as con:  # closed however the reading ends
        try:
            reader = con.sql(f"SELECT * FROM {table}").to_arrow_reader(rows)
        except duckdb.Error as e:
            raise InputError(f"{source}: {str(e).splitlines()[0]}") from None
        yield from (checked(b, source) for b in reader)

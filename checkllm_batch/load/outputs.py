"""Read an outputs dataset as a stream of Arrow record batches.

JSONL, CSV, Parquet, Arrow IPC, a DuckDB table (`duckdb:path.duckdb:table`), or promptfoo's
results file (`promptfoo eval -o results.json` / `.jsonl`, see promptfoo.py). Readers
stream, so memory depends on the batch size, not on the number of rows (a promptfoo
results.json is one JSON document, read whole).

JSON rows are typed from the whole file, never from a batch alone (JSONL: a first pass over
the lines): a var column holds its values typed when they are plainly of one kind and every
row has them, else each row's JSON text (null where the row has no such key), marked for
the case builder (see _var_field). Every batch carries every column of the file.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from queue import Queue
from threading import Event, Semaphore, Thread
from typing import Any, Iterable, Iterator

import duckdb
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from ..errors import InputError
from . import promptfoo
from .cases import CORE, JSON_VAR

# A batch's memory in flight (read ahead, built into cases, evaluated, written) grows with its
# bytes, not its rows: 100,000 rows of 1.1 KB peaked at 2.2 GiB, 50,000 at 1.5 GiB, in the
# same CPU time. Narrow rows still come `batch_rows` at a time.
BATCH_BYTES = 64 << 20

BOM = b"\xef\xbb\xbf"  # a UTF-8 byte-order mark
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
            json_batches = (_json_document(path, batch_rows) if _is_json_document(path)
                            else _jsonl(path, batch_rows))  # promptfoo's results file, or lines
            yield from (checked(b, source, names=False) for b in json_batches)
            return
        yield from (checked(b, source) for b in batches)
    except (pa.ArrowException, OSError) as e:
        raise InputError(f"{source}: cannot read: {str(e).splitlines()[0]}") from None
    except UnicodeDecodeError:  # a CSV header (names) in another encoding
        raise InputError(f"{source}: column names are not UTF-8 text; save the file as "
                         "UTF-8") from None


# columns the engine adds to every case: a dataset column of that name would change how rows
# are routed to tests, or be replaced silently
RESERVED = ("case_id", "test_index", "output_kind", "__test_index")


def check_columns(names: list[str], source: str) -> None:
    """Refuse reserved names (and any starting with "__"), empty names and names given twice."""
    if "" in names:
        raise InputError(f"{source}: column {names.index('') + 1} has no name")
    for name in names:
        if name in RESERVED or name.startswith("__"):
            raise InputError(f"{source}: column {name!r} is reserved for the engine (names "
                             f"{', '.join(RESERVED[:3])} and any starting with __); rename it")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"{source}: column {twice[0]!r} appears more than once")


def checked(batch: pa.RecordBatch, source: str, names: bool = True) -> pa.RecordBatch:
    """A batch whose names are allowed, whose dictionary columns are decoded and whose byte
    columns are UTF-8 text (a CSV is read as bytes)."""
    if names:
        check_columns(batch.schema.names, source)
    batch = decoded(batch)
    binary = [i for i, f in enumerate(batch.schema)
              if pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)]
    for i in binary:
        try:
            text = batch.column(i).cast(pa.string())
        except pa.ArrowInvalid:
            raise InputError(f"{source}: column {batch.schema.names[i]!r} is not UTF-8 text; "
                             "save the file as UTF-8") from None
        batch = batch.set_column(i, batch.schema.names[i], text)
    return batch


def decoded(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch with each dictionary column as its values: a dictionary of strings (pandas
    `category`, a DuckDB ENUM) is text, not a JSON value."""
    for i, field in enumerate(batch.schema):
        if pa.types.is_dictionary(field.type):
            batch = batch.set_column(i, field.name, batch.column(i).cast(field.type.value_type))
    return batch


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
    file, its first line's keys: the whole-file pass of _fields is not needed for names)."""
    path = Path(source)
    if FORMATS.get(path.suffix.lower()) == "jsonl" and not _is_json_document(path):
        return list(next(_jsonl_records(path), {}))
    return next(read_batches(source, 1)).schema.names


def row_count(source: str) -> int | None:
    """The number of rows, when the format says it without reading them (Parquet)."""
    if not source.endswith(".parquet") or not Path(source).exists():
        return None
    try:
        return pq.ParquetFile(source).metadata.num_rows
    except (pa.ArrowException, OSError):
        return None  # reading it says what is wrong


def read_ahead(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Decode the next batch in a thread while the caller works on this one (Arrow's
    readers release the GIL). One batch ahead, no more: the next read starts when the
    caller takes the batch read before it (a bounded queue would let the reader hold one
    more, ~64 MiB, while it waits to hand it over). Reader errors surface in order. When
    the caller stops early (an error in a later stage), the reader stops too and closes its
    source (a file, a DuckDB connection) instead of holding it to the end of the process."""
    queue: Queue = Queue()
    taken = Semaphore(1)  # a read may start
    stop = Event()
    done = object()

    def produce() -> None:
        try:
            while taken.acquire() and not stop.is_set() and \
                    (batch := next(batches, done)) is not done:
                queue.put(batch)
        except BaseException as e:  # handed to the consumer, raised there
            queue.put(e)
        finally:
            getattr(batches, "close", lambda: None)()
        queue.put(done)

    reader = Thread(target=produce, daemon=True)
    reader.start()
    try:
        while (item := queue.get()) is not done:
            taken.release()
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        taken.release()
        reader.join(timeout=10)  # a read under way ends first: then its source is closed


def fingerprint(outputs: str | pa.Table | None) -> str | None:
    """The content hash of an outputs dataset: its file's bytes (a DuckDB source: the
    database file), or an in-memory table's Arrow data; None for a stream, which can only be
    read once."""
    if isinstance(outputs, pa.Table):
        digest = hashlib.sha256()
        for batch in outputs.combine_chunks().to_batches():
            digest.update(batch.serialize())
        return digest.hexdigest()
    if outputs is None:
        return None
    path = Path(outputs.split(":", 2)[1] if outputs.startswith("duckdb:") else outputs)
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def skip_rows(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """The batches after their first `rows` rows (a resumed run's committed ones)."""
    for batch in batches:
        if rows >= batch.num_rows:
            rows -= batch.num_rows
            continue
        yield batch.slice(rows) if rows else batch
        rows = 0


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
    return max(1, min(rows, meta.num_rows * BATCH_BYTES // max(size, 1)))


def rechunk(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """The batches cut (without copying) into even slices of at most `rows` rows and about
    BATCH_BYTES each: wide rows make shorter batches."""
    for batch in batches:
        pieces = max(round(batch.nbytes / BATCH_BYTES), -(-batch.num_rows // rows), 1)
        step = max(1, -(-batch.num_rows // pieces))  # an empty batch yields nothing
        for start in range(0, batch.num_rows, step):
            yield batch.slice(start, step)


def _is_json_document(path: Path) -> bool:
    """A .json file that is one JSON document (not one object per line)."""
    if path.suffix.lower() != ".json":
        return False
    with path.open("rb") as f:
        first = next((line for line in f if line.strip()), b"")
    try:
        line = orjson.loads(first.removeprefix(BOM))
    except orjson.JSONDecodeError:
        return True
    return not isinstance(line, dict) or isinstance(line.get("results"), dict)


def _json_document(path: Path, rows: int) -> Iterator[pa.RecordBatch]:
    """promptfoo's results.json, or a JSON array of row objects."""
    try:
        document = orjson.loads(path.read_bytes().removeprefix(BOM))
    except orjson.JSONDecodeError as e:
        raise InputError(f"{path}: malformed JSON: {e}") from None
    results = promptfoo.results_of(document)
    if results is not None:
        records = [promptfoo.row(r) for r in results]
    elif isinstance(document, list) and all(isinstance(r, dict) for r in document):
        records = document
    else:
        raise InputError(f"{path}: expected promptfoo's results file (promptfoo eval -o "
                         "results.json), a JSON array of objects, or one object per line")
    fields = _fields(records, str(path))
    for start in range(0, len(records), rows):
        yield _to_batch(records[start:start + rows], fields)


def _jsonl(path: Path, rows: int) -> Iterator[pa.RecordBatch]:
    """Line by line, so a malformed line is named. A first pass over the lines decides
    each column from all of them (_fields), so no row's values depend on its batch."""
    fields = _fields(_jsonl_records(path), str(path))
    records: list[dict] = []
    for record in _jsonl_records(path):
        records.append(record)
        if len(records) == rows:
            yield _to_batch(records, fields)
            records = []
    if records:
        yield _to_batch(records, fields)


def _jsonl_records(path: Path) -> Iterator[dict]:
    """The lines' objects; lines of promptfoo's results.jsonl as rows (promptfoo.row)."""
    convert = None
    with path.open("rb") as f:
        for n, line in enumerate(f, 1):
            if n == 1:
                line = line.removeprefix(BOM)  # as the CSV reader takes it
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                raise InputError(f"{path}:{n}: malformed JSON line: {e}") from None
            if not isinstance(record, dict):
                raise InputError(f"{path}:{n}: each line must be a JSON object")
            if convert is None:
                convert = promptfoo.row if promptfoo.is_result(record) else dict
            yield convert(record)


def _fields(records: Iterable[dict], source: str) -> dict[str, pa.Field | None]:
    """Every column of the records, in the order first seen: a var's field decided from
    all of them (_var_field), None for a core column (typed per batch, read by cases.py)."""
    shapes: dict[tuple, int] = {}  # (names, their values' types) -> records: a file has few
    for record in records:
        values = record.values()
        types = tuple(map(type, values))
        if list in types or int in types:
            types = tuple(map(_type, types, values))
        shape = (tuple(record), types)
        shapes[shape] = shapes.get(shape, 0) + 1
    kinds: dict[str, set[str]] = {}
    present: dict[str, int] = {}
    for (names, types), count in shapes.items():
        for name, type_ in zip(names, types):
            kinds.setdefault(name, set()).add(_kind(type_))
            present[name] = present.get(name, 0) + count
    check_columns(list(kinds), source)  # before output_kind is added
    rows = sum(shapes.values())
    return {name: None if name in CORE else _var_field(name, seen, present[name] == rows)
            for name, seen in kinds.items()}


_BIG = "an int beyond int64"  # orjson's ints go to 2**64; Arrow's int64 and float64 refuse
_KINDS = {str: "str", bool: "bool", int: "int", float: "float", type(None): "null", _BIG: "big"}
_PLAIN = {  # a var's kinds of values -> its Arrow type; any other mix is JSON text
    frozenset(): pa.null(), frozenset({"str"}): pa.string(), frozenset({"bool"}): pa.bool_(),
    frozenset({"int"}): pa.int64(), frozenset({"float"}): pa.float64(),
    frozenset({"int", "float"}): pa.float64(), frozenset({"list:"}): pa.list_(pa.null()),
    frozenset({"list:str"}): pa.list_(pa.string()), frozenset({"list:int"}): pa.list_(pa.int64()),
    frozenset({"list:float"}): pa.list_(pa.float64()),
    frozenset({"list:int", "list:float"}): pa.list_(pa.float64())}
_MISSING = object()


def _type(type_: type, value: Any) -> Any:
    """What tells a value's kind beyond its type: a list's item types, an int beyond int64."""
    if type_ is list:
        items = frozenset(map(type, value))
        big = int in items and max(v for v in value if type(v) is int) >= 2**63
        return items | {_BIG} if big else items
    return _BIG if type_ is int and value >= 2**63 else type_


def _kind(type_: Any) -> str:
    """A kind of JSON value (from _type): str, bool, int, big, float, null, dict, or for a
    list list:str, list:int, list:float, list: (no items but nulls) or list:mixed."""
    if not isinstance(type_, frozenset):
        return _KINDS.get(type_, "dict")
    items = {_KINDS.get(t, "mixed") for t in type_} - {"null"}
    if items == {"int", "float"}:
        items = {"float"}
    return "list:" + ("" if not items else items.pop() if len(items) == 1 else "mixed")


def _var_field(name: str, kinds: set[str], complete: bool) -> pa.Field:
    """A var column's field: its Arrow type when its values are plainly of one kind (nulls
    aside; ints and floats are floats; lists of strings or of numbers, empty ones among
    them) and every record has it; else each row's JSON text, marked JSON_VAR for cases.py
    (a dict, a mix of kinds, nested or mixed lists, or a record without it)."""
    kinds = kinds - {"null"}
    if len(kinds) > 1 and all(k.startswith("list:") for k in kinds):
        kinds.discard("list:")
    plain = _PLAIN.get(frozenset(kinds)) if complete else None
    if plain is not None:
        return pa.field(name, plain)
    return pa.field(name, pa.string(), metadata={JSON_VAR: b"1"})


def _to_batch(records: list[dict], fields: dict[str, pa.Field | None]) -> pa.RecordBatch:
    """The records as one batch holding every column of their file (see _fields)."""
    arrays: dict[str, pa.Array] = {}
    schema = []
    for name, field in fields.items():
        if field is None:
            core = _core_columns(name, [r.get(name) for r in records])
            arrays |= core
            schema += [pa.field(n, a.type) for n, a in core.items()]
            continue
        if field.metadata:  # JSON null is the text null; a record without it, a null
            values = [None if (v := r.get(name, _MISSING)) is _MISSING
                      else orjson.dumps(v).decode() for r in records]
        else:
            values = [r.get(name) for r in records]
        arrays[name] = pa.array(values, field.type)
        schema.append(field)
    return pa.RecordBatch.from_arrays(list(arrays.values()), schema=pa.schema(schema))


def _core_columns(name: str, values: list[Any]) -> dict[str, pa.Array]:
    """A core column of a batch, typed by Arrow (cases.py reads each type): JSON text where
    its values mix types; `output` as text, JSON values as JSON text, and its output_kind."""
    columns: dict[str, pa.Array] = {}
    if name == "output":
        columns["output_kind"] = pa.array(
            ["null" if v is None else "text" if isinstance(v, str) else "json" for v in values])
        values = [v if v is None or isinstance(v, str) else orjson.dumps(v).decode()
                  for v in values]
    try:
        columns[name] = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed types: keep each value as JSON
        columns[name] = pa.array([None if v is None else orjson.dumps(v).decode()
                                  for v in values])
    return columns


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

"""JSON rows (JSONL, a JSON array, promptfoo's results file) as typed Arrow batches.

JSON rows are typed from the whole file, never from a batch alone (JSONL: a first pass over
the lines): a var column holds its values typed when they are plainly of one kind and every
row has them, else each row's JSON text (null where the row has no such key), marked for
the case builder (see _var_field). Every batch carries every column of the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson
import pyarrow as pa

from ..errors import InputError
from . import promptfoo
from .cases import CORE, JSON_VAR
from .columns import check_columns

BOM = b"\xef\xbb\xbf"  # a UTF-8 byte-order mark


def is_json_document(path: Path) -> bool:
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


def json_document(path: Path, rows: int) -> Iterator[pa.RecordBatch]:
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


def jsonl(path: Path, rows: int) -> Iterator[pa.RecordBatch]:
    """Line by line, so a malformed line is named. A first pass over the lines decides
    each column from all of them (_fields), so no row's values depend on its batch."""
    fields = _fields(jsonl_records(path), str(path))
    records: list[dict] = []
    for record in jsonl_records(path):
        records.append(record)
        if len(records) == rows:
            yield _to_batch(records, fields)
            records = []
    if records:
        yield _to_batch(records, fields)


def jsonl_records(path: Path) -> Iterator[dict]:
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

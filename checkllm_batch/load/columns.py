"""The columns of an outputs dataset, as every reader hands them on: names the engine does not
reserve, dictionaries decoded, bytes checked to be UTF-8 text."""

from __future__ import annotations

import pyarrow as pa

from ..errors import InputError

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

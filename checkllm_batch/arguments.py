"""The public verbs' arguments checked before anything is read or any file created: each
wrong one an InputError naming the argument, what it accepts and what it was given."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb

from .errors import InputError

DATABASE = "a database file path, ':memory:' or a DuckDB connection"
# files a results database is not, by their extension
NOT_DATABASES = {".parquet": "Parquet", ".csv": "CSV", ".tsv": "TSV", ".json": "JSON",
                 ".jsonl": "JSON", ".ndjson": "JSON", ".arrow": "Arrow", ".feather": "Arrow",
                 ".ipc": "Arrow", ".yaml": "YAML", ".yml": "YAML", ".xlsx": "Excel"}
_MAGIC = b"DUCK"  # bytes 8-11 of every DuckDB database file


def given(value: Any) -> str:
    """How a wrong value is named in a message: its type, and itself when short."""
    text = repr(value)
    return f"{type(value).__name__} {text}" if len(text) <= 60 else type(value).__name__


def database(db: Any, name: str = "db") -> None:
    """`db` is a DuckDB connection, ':memory:', or the path of a DuckDB database (new, or
    an existing file that is one), not a data file nor anything else."""
    if isinstance(db, duckdb.DuckDBPyConnection):
        return
    if not isinstance(db, (str, os.PathLike)) or isinstance(db, bytes):
        raise InputError(f"{name}: takes {DATABASE}, not {given(db)}")
    path = os.fspath(db)
    if path == ":memory:":
        return
    if not str(path).strip():
        raise InputError(f"{name}: takes {DATABASE}, not an empty path")
    kind = NOT_DATABASES.get(Path(path).suffix.lower())
    if kind:
        raise InputError(f"{name}: {path} names a {kind} file, not a DuckDB database: "
                         "outputs are the second argument; results go to a .duckdb path")
    if Path(path).is_dir():
        raise InputError(f"{name}: {path} is a folder: give a database file in it")
    if Path(path).is_file() and not _is_duckdb(Path(path)):
        raise InputError(f"{name}: {path} exists and is not a DuckDB database")


def _is_duckdb(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            head = f.read(12)
    except OSError:
        return True  # unreadable: DuckDB's own error names it
    return not head or head[8:12] == _MAGIC  # an empty file: DuckDB makes it one


def rows(value: Any, name: str = "batch_rows") -> None:
    """A number of rows: a whole number, at least 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{name}: takes a whole number of rows, at least 1, not {given(value)}")


def flag(value: Any, name: str) -> None:
    if not isinstance(value, bool):
        raise InputError(f"{name}: takes True or False, not {given(value)}")


def optional_text(value: Any, name: str) -> None:
    if value is not None and not isinstance(value, str):
        raise InputError(f"{name}: takes a string or None, not {given(value)}")


def sample(value: Any, seed: Any) -> None:
    """judge_sample: a fraction in (0, 1], a percentage string, or a count of at least 1."""
    if value is not None and (isinstance(value, bool)
                              or not isinstance(value, (str, int, float))):
        raise InputError(f"judge_sample: takes a fraction (0.02), a percentage ('2%') or a "
                         f"count of cases (2000), not {given(value)}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"judge_sample_seed: takes a whole number, not {given(seed)}")


def mapping(value: Any, name: str) -> None:
    if value is not None and not isinstance(value, Mapping):
        raise InputError(f"{name}: takes a mapping or None, not {given(value)}")


def outputs(value: Any) -> None:
    """Outputs a verb can read: a path, a frame; a pandas Series is not a table."""
    kind = type(value)
    if kind.__name__ == "Series" and kind.__module__.split(".")[0] in ("pandas", "polars"):
        raise InputError("outputs: takes a dataframe, not a Series: give "
                         "series.to_frame('output') (one column named output)")
    if isinstance(value, (int, float, bytes)) or value is True or value is False:
        raise InputError(f"outputs: takes a file path, a DuckDB table, a dataframe or None "
                         f"(the suite's own outputs), not {given(value)}")

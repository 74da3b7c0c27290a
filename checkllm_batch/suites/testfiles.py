"""`tests: file://...`: test cases from CSV (promptfoo's `__expected` convention), JSONL,
JSON/YAML lists, or Parquet (rows read like CSV rows).

An `__expected` cell names an assertion type: it is read by `cell`, the assertions layer's
rule (assertions/reading/cells.py), handed in by whoever reads the suite."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from ..errors import ConfigError, Problem, Where
from ..js.yaml12 import LineDict, checked_int, decode, load_yaml

Cell = Callable[[str], dict]  # an `__expected` cell (trimmed) -> the assertion it writes


def read_test_file(path: Path, cell: Cell) -> list[dict]:
    if not path.is_file():
        raise ConfigError([Problem(Where(str(path)), "tests file not found" if not path.exists()
                                   else "a tests file must be a file, not a folder")])
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return [_csv_test(i, row, path, cell) for i, row in enumerate(_csv_rows(path))]
    if suffix == ".parquet":
        try:
            rows = pq.read_table(path).to_pylist()
        except (pa.ArrowException, OSError) as e:
            raise ConfigError([Problem(Where(str(path)), f"cannot read: {str(e).splitlines()[0]}"
                                       )]) from None
        _unique_columns(list(rows[0]) if rows else [], path)
        return [_csv_test(i, {k: "" if v is None else str(v) for k, v in r.items()}, path, cell)
                for i, r in enumerate(rows)]
    if suffix == ".jsonl":
        return _jsonl_tests(path)
    if suffix in (".yaml", ".yml", ".json"):
        loaded = load_yaml(path)
        if loaded is None:  # empty, only comments, or `null`
            raise ConfigError([Problem(Where(str(path)), "no tests: the file holds nothing "
                                       "(write a test mapping or a list of them)")])
        return loaded if isinstance(loaded, list) else [loaded]
    raise ConfigError([Problem(Where(str(path)),
                               "tests file must be .csv, .jsonl, .json, .yaml or .parquet")])


def _csv_rows(path: Path) -> list[dict[str, str]]:
    """The rows under the header; a row of another length is refused, as promptfoo's
    csv-parse does, never cut short or padded into a test that lost its assertions."""
    reader = csv.reader(io.StringIO(decode(path.read_bytes(), path), newline=""))
    header = next(reader, [])
    _unique_columns(header, path)
    rows, ragged, line = [], [], reader.line_num + 1
    for row in reader:
        if row and len(row) != len(header):  # (an empty line is no row)
            ragged.append(Problem(Where(str(path), line), f"{len(row)} cell"
                                  f"{'s' * (len(row) > 1)} where the header has {len(header)}"))
        elif row:
            rows.append(dict(zip(header, row)))
        line = reader.line_num + 1
    if ragged:
        raise ConfigError(ragged)
    return rows


def _unique_columns(names: list[str], path: Path) -> None:
    """A column written twice would lose one of its cells silently."""
    stripped = [(n or "").strip() for n in names]
    twice = sorted({n for n in stripped if stripped.count(n) > 1})
    if twice:
        raise ConfigError([Problem(Where(str(path), 1),
                                   f"column {twice[0]!r} appears more than once")])


def _jsonl_tests(path: Path) -> list[dict]:
    tests: list[dict] = []
    for n, line in enumerate(decode(path.read_bytes(), path).splitlines(), 1):
        if line.strip():
            try:
                test = json.loads(line, parse_int=lambda text: checked_int(int(text)))
            except (ValueError, RecursionError, yaml.YAMLError) as e:
                raise ConfigError([Problem(Where(str(path), n),
                                           f"invalid JSON: {getattr(e, 'problem', e)}")]) from None
            if not isinstance(test, dict):
                raise ConfigError([Problem(Where(str(path), n),
                                           "each line must be a JSON object (a test)")])
            test = LineDict(test)
            test.line = n
            test.setdefault("description", f"Row #{n}")
            tests.append(test)
    return tests


def _csv_test(index: int, row: dict[str, str], path: Path, cell_reader: Cell) -> dict:
    row = {(k or "").strip(): v for k, v in row.items()}
    test = LineDict(vars={})
    test.line = index + 2  # header is line 1
    asserts: list[dict] = []
    thresholds: dict[int, float] = {}
    for column, cell in row.items():
        cell = cell or ""
        if column.startswith("__expected"):
            if cell.strip():
                asserts.append(cell_reader(cell.strip()))
        elif column == "__description":
            if cell:  # an empty cell keeps the default "Row #N"
                test["description"] = cell
        elif column in ("__providerOutput", "__output"):
            test["providerOutput"] = cell
        elif column == "__threshold":
            if cell.strip():
                test["threshold"] = _number(cell, column, path, index)
        elif column in ("__prefix", "__suffix"):
            test.setdefault("options", {})[column[2:]] = cell
        elif column.startswith("__metadata:"):
            key = column[len("__metadata:"):]
            if key.endswith("[]"):
                test.setdefault("metadata", {})[key[:-2]] = [
                    item.replace("\\,", ",").strip() for item in re.split(r"(?<!\\),", cell)
                    if item.strip()]
            else:
                test.setdefault("metadata", {})[key] = cell
        elif column.startswith("__config:__expected") and column.endswith(":threshold"):
            n = column[len("__config:__expected"):-len(":threshold")]
            if cell.strip():
                thresholds[int(n or 1) - 1] = _number(cell, column, path, index)
        elif column == "__metric":
            pass  # applied below to every assertion
        elif column in ("id", "__id", "test_id"):
            test["id"] = cell
        else:
            test["vars"][column] = cell
    for i, value in thresholds.items():
        if i < len(asserts):
            asserts[i]["threshold"] = value
    if row.get("__metric"):
        for a in asserts:
            a["metric"] = row["__metric"]
    test["assert"] = asserts
    test.setdefault("description", f"Row #{index + 1}")
    return test


# promptfoo's parseFiniteNumber: the whole trimmed cell is one decimal literal
_FINITE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


def _number(cell: str, column: str, path: Path, index: int) -> float:
    """A threshold cell as promptfoo reads it: a whole finite decimal number (`0` included).
    promptfoo ignores any other `__threshold` ("0.5abc", "Infinity") and stops on such a
    `__config` threshold; both are a config error here."""
    text = cell.strip()
    if not _FINITE.fullmatch(text) or not math.isfinite(float(text)):
        raise ConfigError([Problem(Where(str(path), index + 2),
                                   f"{column} must be a number, got {cell!r}")])
    return float(text)

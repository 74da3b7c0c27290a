"""`tests: file://...`: test cases from CSV (promptfoo's `__expected` convention), JSONL,
JSON/YAML lists, or Parquet (rows read like CSV rows)."""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from ..assertions.registry import REGISTRY, CsvValue, known_names
from ..assertions.text import split_items
from ..errors import ConfigError
from ..js.yaml12 import LineDict, checked_int, decode, load_yaml

# promptfoo's CSV default threshold for `classifier`, a promptfoo type we do not register (the
# cell then fails at parse as one we cannot run); registered types declare theirs (csv_threshold)
_UNREGISTERED_CSV_THRESHOLDS = {"classifier": 0.75}
# promptfoo 0.123.1's base types, in its own order (BaseAssertionTypesSchema): a cell naming one
# is that type even where we do not have it (then parsing says it cannot run here), never
# silently an `equals`. Its CSV regex tries them in this order, the first that reads the whole
# cell wins: "similar:dot:x" is `similar` with the value "dot:x", as promptfoo reads it.
PROMPTFOO_TYPES = (
    "agent-rubric answer-relevance bleu classifier contains contains-all contains-any "
    "contains-html contains-json contains-sql contains-xml context-faithfulness context-recall "
    "context-relevance conversation-relevance cost equals factuality finish-reason g-eval gleu "
    "guardrails icontains icontains-all icontains-any is-html is-json is-refusal is-sql "
    "is-valid-function-call is-valid-openai-function-call is-valid-openai-tools-call is-xml "
    "javascript latency levenshtein llm-rubric pi meteor model-graded-closedqa "
    "model-graded-factuality moderation perplexity perplexity-score python regex rouge-n ruby "
    "similar similar:cosine similar:dot similar:euclidean starts-with skill-used "
    "trajectory:goal-success trajectory:tool-args-match trajectory:step-count "
    "trajectory:tool-sequence trajectory:tool-used trace-error-spans trace-span-count "
    "trace-span-duration search-rubric webhook word-count select-best human max-score "
    "assert-set").split()


def read_test_file(path: Path) -> list[dict]:
    if not path.is_file():
        raise ConfigError([f"{path}: tests file not found" if not path.exists()
                           else f"{path}: a tests file must be a file, not a folder"])
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return [_csv_test(i, row, path) for i, row in enumerate(_csv_rows(path))]
    if suffix == ".parquet":
        try:
            rows = pq.read_table(path).to_pylist()
        except (pa.ArrowException, OSError) as e:
            raise ConfigError([f"{path}: cannot read: {str(e).splitlines()[0]}"]) from None
        _unique_columns(list(rows[0]) if rows else [], path)
        return [_csv_test(i, {k: "" if v is None else str(v) for k, v in r.items()}, path)
                for i, r in enumerate(rows)]
    if suffix == ".jsonl":
        return _jsonl_tests(path)
    if suffix in (".yaml", ".yml", ".json"):
        loaded = load_yaml(path)
        if loaded is None:  # empty, only comments, or `null`
            raise ConfigError([f"{path}: no tests: the file holds nothing (write a test "
                               "mapping or a list of them)"])
        return loaded if isinstance(loaded, list) else [loaded]
    raise ConfigError([f"{path}: tests file must be .csv, .jsonl, .json, .yaml or .parquet"])


def _csv_rows(path: Path) -> list[dict[str, str]]:
    """The rows under the header; a row of another length is refused, as promptfoo's
    csv-parse does, never cut short or padded into a test that lost its assertions."""
    reader = csv.reader(io.StringIO(decode(path.read_bytes(), path), newline=""))
    header = next(reader, [])
    _unique_columns(header, path)
    rows, ragged, line = [], [], reader.line_num + 1
    for row in reader:
        if row and len(row) != len(header):  # (an empty line is no row)
            ragged.append(f"{path}:{line}: {len(row)} cell{'s' * (len(row) > 1)} where the "
                          f"header has {len(header)}")
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
        raise ConfigError([f"{path}:1: column {twice[0]!r} appears more than once"])


def _jsonl_tests(path: Path) -> list[dict]:
    tests: list[dict] = []
    for n, line in enumerate(decode(path.read_bytes(), path).splitlines(), 1):
        if line.strip():
            try:
                test = json.loads(line, parse_int=lambda text: checked_int(int(text)))
            except (ValueError, RecursionError, yaml.YAMLError) as e:
                raise ConfigError([f"{path}:{n}: invalid JSON: {getattr(e, 'problem', e)}"]
                                  ) from None
            if not isinstance(test, dict):
                raise ConfigError([f"{path}:{n}: each line must be a JSON object (a test)"])
            test = LineDict(test)
            test.line = n
            test.setdefault("description", f"Row #{n}")
            tests.append(test)
    return tests


def _csv_test(index: int, row: dict[str, str], path: Path) -> dict:
    row = {(k or "").strip(): v for k, v in row.items()}
    test = LineDict(vars={})
    test.line = index + 2  # header is line 1
    asserts: list[dict] = []
    thresholds: dict[int, float] = {}
    for column, cell in row.items():
        cell = cell or ""
        if column.startswith("__expected"):
            if cell.strip():
                asserts.append(assertion_from_string(cell.strip()))
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
        raise ConfigError([f"{path}:{index + 2}: {column} must be a number, got {cell!r}"])
    return float(text)


@functools.cache
def _cell_pattern() -> re.Pattern[str]:
    """promptfoo's CSV cell regex: `[not-]type[(threshold)][:value]`, its types first in its
    order, then the names only we know (CheckLLM's, PromptKit's), longest first."""
    ours = sorted(set(known_names()) - set(PROMPTFOO_TYPES), key=len, reverse=True)
    names = "|".join(re.escape(n) for n in [*PROMPTFOO_TYPES, *ours])
    return re.compile(rf"^(not-)?({names})(?:\((\d+(?:\.\d+)?)\))?(?::(.*))?$", re.S)


def assertion_from_string(cell: str) -> dict[str, Any]:
    """promptfoo's assertionFromString for an `__expected` cell (already trimmed)."""
    for prefix in ("javascript:", "fn:", "eval:"):
        if cell.startswith(prefix):
            return {"type": "javascript", "value": cell[len(prefix):].strip()}
    if cell.startswith("file://") and re.search(r"\.(js|cjs|mjs|ts)(:|$)", cell):
        return {"type": "javascript", "value": cell}
    if cell.startswith("file://") and re.search(r"\.py(:|$)", cell):
        return {"type": "python", "value": cell}  # promptfoo strips file:// here (a bug)
    for prefix in ("grade:", "llm-rubric:"):
        if cell.startswith(prefix):
            return {"type": "llm-rubric", "value": cell[len(prefix):]}
    if cell.startswith("python:"):
        return {"type": "python", "value": cell[len("python:"):].strip()}
    m = _cell_pattern().match(cell)
    if not m:
        return {"type": "equals", "value": cell}
    negate, base, threshold, rest = m.groups()
    out: dict[str, Any] = {"type": (negate or "") + base}
    # each type declares its CSV rule (csv_value, csv_threshold); promptfoo's rules name
    # types, never one of our aliases (similar:cosine, model-graded-relevance): those read plain
    atype = REGISTRY.get(base)
    reading = atype.csv_value if atype else CsvValue.TRIMMED
    if reading is CsvValue.ITEMS:
        if not rest:  # promptfoo keeps "" or nothing as it is: the type needs a value
            return out  # (and these types take no threshold)
        try:
            out["value"] = split_items(rest)  # [N]: quoted items may hold commas
        except ValueError:
            out["value"] = rest  # the assertion's own check reports it, with the place
    elif reading is CsvValue.AS_IS:
        if rest:
            out["value"] = rest
    elif rest is not None:
        out["value"] = rest.strip()
    # only the types with a CSV threshold take one; promptfoo ignores `(N)` on the others
    default = atype.csv_threshold if atype else _UNREGISTERED_CSV_THRESHOLDS.get(base)
    if default is not None:
        out["threshold"] = default if threshold is None else float(threshold)
    return out

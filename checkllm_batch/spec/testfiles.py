"""`tests: file://...`: test cases from CSV (promptfoo's `__expected` convention), JSONL,
JSON/YAML lists, or Parquet (rows read like CSV rows)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from ..assertions.registry import known_names
from ..errors import ConfigError
from .yaml12 import LineDict, load_yaml

# CSV types whose threshold defaults when no "(N)" is written (promptfoo §7.5).
_CSV_THRESHOLD_TYPES = {"answer-relevance", "classifier", "context-faithfulness", "context-recall",
                        "context-relevance", "cost", "latency", "levenshtein", "perplexity",
                        "perplexity-score", "rouge-n", "similar", "similarity", "starts-with"}
_LIST_TYPES = {"contains-all", "contains-any", "icontains-all", "icontains-any"}
_UNTRIMMED_TYPES = {"is-json", "contains-json"}


def read_test_file(path: Path) -> list[dict]:
    if not path.exists():
        raise ConfigError([f"{path}: tests file not found"])
    suffix = path.suffix.lower()
    if suffix == ".csv":
        with path.open(encoding="utf-8-sig", newline="") as f:
            rows = list(csv.DictReader(f))
        return [_csv_test(i, row, path) for i, row in enumerate(rows)]
    if suffix == ".parquet":
        rows = pq.read_table(path).to_pylist()
        return [_csv_test(i, {k: "" if v is None else str(v) for k, v in r.items()}, path)
                for i, r in enumerate(rows)]
    if suffix == ".jsonl":
        tests = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    test = LineDict(json.loads(line))
                except (json.JSONDecodeError, TypeError) as e:
                    raise ConfigError([f"{path}:{n}: invalid JSON: {e}"]) from None
                test.line = n
                test.setdefault("description", f"Row #{n}")
                tests.append(test)
        return tests
    if suffix in (".yaml", ".yml", ".json"):
        loaded = load_yaml(path)
        return loaded if isinstance(loaded, list) else [loaded]
    raise ConfigError([f"{path}: tests file must be .csv, .jsonl, .json, .yaml or .parquet"])


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
            test["description"] = cell
        elif column in ("__providerOutput", "__output"):
            test["providerOutput"] = cell
        elif column == "__threshold":
            if cell.strip() and float(cell) != 0:
                test["threshold"] = float(cell)
        elif column.startswith("__metadata:"):
            test.setdefault("metadata", {})[column[len("__metadata:"):]] = cell
        elif column.startswith("__config:__expected") and column.endswith(":threshold"):
            n = column[len("__config:__expected"):-len(":threshold")]
            if cell.strip():
                thresholds[int(n or 1) - 1] = float(cell)
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


def assertion_from_string(cell: str) -> dict[str, Any]:
    """promptfoo's assertionFromString for an `__expected` cell (already trimmed)."""
    for prefix in ("javascript:", "fn:", "eval:"):
        if cell.startswith(prefix):
            return {"type": "javascript", "value": cell[len(prefix):].strip()}
    for prefix in ("grade:", "llm-rubric:"):
        if cell.startswith(prefix):
            return {"type": "llm-rubric", "value": cell[len(prefix):]}
    if cell.startswith("python:"):
        return {"type": "python", "value": cell[len("python:"):].strip()}
    names = "|".join(re.escape(n) for n in sorted(known_names(), key=len, reverse=True))
    m = re.match(rf"^(not-)?({names})(?:\(([\d.]+)\))?(?::(.*))?$", cell, re.S)
    if not m:
        return {"type": "equals", "value": cell}
    negate, base, threshold, rest = m.groups()
    out: dict[str, Any] = {"type": (negate or "") + base}
    if base in _LIST_TYPES:
        out["value"] = [s.strip() for s in (rest or "").split(",") if s.strip()]
    elif base in _UNTRIMMED_TYPES:
        if rest:
            out["value"] = rest
    elif rest is not None:
        out["value"] = rest.strip()
    if threshold is not None:
        out["threshold"] = float(threshold)
    elif base in _CSV_THRESHOLD_TYPES:
        out["threshold"] = 0.8 if base in ("similar", "similarity") else 0.75
    return out

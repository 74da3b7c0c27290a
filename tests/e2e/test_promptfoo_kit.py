"""Our verdicts against promptfoo 0.123.1's, case for case, one table per area.

Each row of tests/promptfoo_kit/<area>.jsonl holds an output, an assertion and the pass,
score and reason promptfoo itself gave (recorded with the offline kit by record.py, never
from our output). A row's "vars" are the test's vars there and the row's columns here. We must give the same verdict and, where promptfoo scores, the same score.
A row with "differs" is a deliberate difference (listed in the type's docs): we give the
verdict in its "ours" field instead. A row with "pending" is a known miss outside the helper
functions (named there), expected to fail until it is fixed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.engine import run_assertion

KIT = Path(__file__).parents[1] / "promptfoo_kit"


def table_rows(folder: Path) -> list[tuple[str, int, dict]]:
    """(area, line number, row) of every table in `folder`."""
    return [(path.stem, n, json.loads(line)) for path in sorted(folder.glob("*.jsonl"))
            for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1) if line]


def params(rows: list[tuple[str, int, dict]]) -> list:
    """One pytest param a row; a "pending" row is a strict xfail."""
    return [pytest.param(row, id=f"{area}-{n}", marks=[pytest.mark.xfail(
        strict=True, reason=row["pending"])] if "pending" in row else [])
        for area, n, row in rows]


def check_verdict(got: dict, row: dict) -> None:
    """Our result matches promptfoo's (or, for a "differs" row, our recorded one)."""
    want = row.get("ours", row["promptfoo"]) if "differs" in row else row["promptfoo"]
    if want["pass"] is None:  # promptfoo (or our deliberate difference): an error
        assert got["status"] == "error", got
        return
    assert got["pass"] == want["pass"], (got, want)
    if want.get("score") is not None and got["score"] is not None:
        assert got["score"] == pytest.approx(want["score"], abs=1e-6), (got, want)


def check_differences_say_why(rows: list[tuple[str, int, dict]]) -> None:
    for area, n, row in rows:
        assert "differs" not in row or (row["differs"] and "ours" in row), (area, n)


ROWS = table_rows(KIT)


def _ours(tmp_path: Path, row: dict) -> dict:
    for name, text in row.get("files", {}).items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    columns = {"output": row["output"], **row.get("columns", {}), **row.get("vars", {})}
    try:
        return run_assertion(tmp_path, row["assert"], [columns])[0]
    except Exception as exc:  # a suite promptfoo errors on may be refused at parse time
        return {"status": "error", "pass": None, "score": None, "reason": str(exc)}


@pytest.mark.parametrize("row", params(ROWS))
def test_verdict_matches_promptfoo(tmp_path, row):
    check_verdict(_ours(tmp_path, row), row)


def test_every_difference_says_why():
    check_differences_say_why(ROWS)

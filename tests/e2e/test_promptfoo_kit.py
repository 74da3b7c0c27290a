"""Our verdicts against promptfoo 0.123.1's, case for case, one table per area.

Each row of tests/promptfoo_kit/<area>.jsonl holds an output, an assertion and the pass,
score and reason promptfoo itself gave (recorded with the offline kit by record.py, never
from our output). A row's "vars" are the test's vars there and the row's columns here. We must give the same verdict and, where promptfoo scores, the same score.
A row with "differs" is a deliberate difference (listed in the type's docs): we give the
verdict in its "ours" field instead. A row with "pending" is a known miss outside the helper
functions (named there), expected to fail until it is fixed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.engine import run_assertion
from fixtures.promptfoo_kit import check_differences_say_why, check_verdict, params, table_rows

KIT = Path(__file__).parents[1] / "promptfoo_kit"


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

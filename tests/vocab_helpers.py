"""Run one assertion over a few outputs through the real engine (parse -> plan -> evaluate)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import yaml

from checkllm_batch.assertions.reading import load_suite
from checkllm_batch.evaluate.engine import evaluate_batch
from checkllm_batch.evaluate.plan import build_plan
from checkllm_batch.load.cases import CaseBuilder


def run_assertion(tmp_path: Path, assertion: dict[str, Any], rows: list[dict[str, Any]]
                  ) -> list[dict[str, Any]]:
    """status / pass / score / reason of `assertion` on each row (a dict of outputs columns);
    for an assert-set, the set's own result (its members' rows are left out)."""
    suite_file = tmp_path / "suite.yaml"
    suite_file.write_text(yaml.safe_dump({"assert": [assertion]}), encoding="utf-8")
    plan = build_plan(load_suite(suite_file))
    frame = pl.DataFrame(rows)
    batch = frame.to_arrow().to_batches()[0]
    cases = CaseBuilder(plan, batch.schema, "<rows>").build(batch, 0)
    results, _ = evaluate_batch(plan, cases)
    top = results.filter(pl.col("parent_index").is_null())
    return top.sort("case_id").select("status", "pass", "score", "reason").to_dicts()

"""One batch of outputs evaluated with nothing from the run's process: a pure, picklable
function of (suite, batch, first case id) -> the result frames as stored. No database, no
worker pool, no judge: the cluster runs it anywhere, and case ids depend only on the
batch's position in the dataset."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl
import pyarrow as pa

from ..evaluate.engine import evaluate_batch
from ..evaluate.plan import Plan, build_plan
from ..load.cases import CaseBuilder
from ..store.results import CASE_COLUMNS, RESULT_COLUMNS, TEST_COLUMNS
from ..suites.model import Suite

TABLES = {"cases": CASE_COLUMNS, "assertion_results": RESULT_COLUMNS,
          "test_results": TEST_COLUMNS}


def evaluate_frames(suite: Suite, batch: pa.RecordBatch, first_case_id: int,
                    source: str = "<batch>") -> dict[str, pl.DataFrame]:
    """cases, assertion_results and test_results of one batch, as the database holds them."""
    return BatchEvaluator(suite, source).frames(batch, first_case_id)


@dataclass
class BatchEvaluator:
    """evaluate_frames over many batches of one source: the plan is built once, and a case
    builder once per schema (as the single-machine run does)."""

    suite: Suite
    source: str
    judge_config: Any = None  # with `runner`: model-graded assertions through a JudgeHook
    runner: Any = None
    plan: Plan = field(init=False)
    _builders: dict[pa.Schema, CaseBuilder] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.plan = build_plan(self.suite)
        self.hook = None
        if self.judge_config is not None:
            from ..evaluate.judging.hook import JudgeHook

            self.hook = JudgeHook(self.plan, self.judge_config, self.runner)

    def frames(self, batch: pa.RecordBatch, first_case_id: int) -> dict[str, pl.DataFrame]:
        builder = self._builders.get(batch.schema)
        if builder is None:
            builder = self._builders[batch.schema] = CaseBuilder(self.plan, batch.schema,
                                                                 self.source)
        cases = builder.build(batch, first_case_id)
        results, tests = evaluate_batch(self.plan, cases, judge=self.hook)
        return {name: frame.select(TABLES[name])
                for name, frame in zip(TABLES, (cases, results, tests))}

"""One batch of outputs evaluated: cases built from its rows (a CaseBuilder per schema), every
assertion evaluated, the result frames as stored. Both engines call it: the single-process
engine with the run's judge hook, a Ray task with nothing from the run's process (no
database, no worker pool; model-graded assertions through the replies it was sent), so case
ids depend only on the batch's position in the dataset."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import polars as pl
import pyarrow as pa

from ..evaluate.batch import evaluate_batch
from ..evaluate.judging.hook import JudgeHook
from ..evaluate.plan import Plan, Planned, build_plan
from ..load.cases import CaseBuilder
from ..store.runs import CASE_COLUMNS, RESULT_COLUMNS, TEST_COLUMNS
from ..suites.model import Suite

TABLES = {"cases": CASE_COLUMNS, "assertion_results": RESULT_COLUMNS,
          "test_results": TEST_COLUMNS}


def evaluate_frames(suite: Suite, batch: pa.RecordBatch, first_case_id: int,
                    source: str = "<batch>") -> dict[str, pl.DataFrame]:
    """cases, assertion_results and test_results of one batch, as the database holds them:
    a pure, picklable function of (suite, batch, first case id)."""
    return BatchEvaluator.of(suite, source).frames(batch, first_case_id)


@dataclass
class BatchEvaluator:
    """The batches of one source: the plan built once, a case builder once per schema (a
    source's batches may differ in schema: a column all null in one file of a dataset)."""

    plan: Plan
    source: str
    # model-graded assertions (the run's hook, or it behind a judge sample: run/sample.py);
    # without it, an error row each
    hook: Callable[[Planned, pl.DataFrame], pl.DataFrame] | None = None
    _builders: dict[pa.Schema, CaseBuilder] = field(default_factory=dict, init=False)

    @classmethod
    def of(cls, suite: Suite, source: str, judge_config: Any = None, runner: Any = None
           ) -> BatchEvaluator:
        """A task's evaluator: with `judge_config`, model-graded assertions through a
        JudgeHook on `runner` (a Ray worker's RecordingRunner)."""
        plan = build_plan(suite)
        hook = None if judge_config is None else JudgeHook(plan, judge_config, runner)
        return cls(plan, source, hook)

    def builder(self, schema: pa.Schema) -> CaseBuilder:
        """The case builder of a schema (checking the batch's columns once per schema)."""
        builder = self._builders.get(schema)
        if builder is None:
            builder = self._builders[schema] = CaseBuilder(self.plan, schema, self.source)
        return builder

    def cases(self, batch: pa.RecordBatch, first_case_id: int) -> pl.DataFrame:
        return self.builder(batch.schema).build(batch, first_case_id)

    def evaluate(self, batch: pa.RecordBatch, first_case_id: int
                 ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        """(cases, assertion_results, test_results) of a batch, in store.append's order."""
        cases = self.cases(batch, first_case_id)
        results, tests = evaluate_batch(self.plan, cases, judge=self.hook)
        return cases, results, tests

    def frames(self, batch: pa.RecordBatch, first_case_id: int) -> dict[str, pl.DataFrame]:
        """The batch's frames by table, with the columns the database holds."""
        return {name: frame.select(TABLES[name])
                for name, frame in zip(TABLES, self.evaluate(batch, first_case_id))}

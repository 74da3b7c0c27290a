"""The engine's judge hook: model-graded assertions of a batch, through the runner.

Per planned assertion it resolves the grading model and prompt (assertion > test options >
suite `judge:`), grades the rows, and turns the outcomes into result rows by the rule every
type shares (rows.py): a null output fails, negated or not. CheckLLM `cost` (cost.py) reads
the cost of the batch's other graded assertions, graded here first.
"""

from __future__ import annotations

from typing import Any, Callable

import polars as pl

from ...assertions.graded import NO_JUDGE
from ...assertions.graded.context import OUTCOME_SCHEMA, Graded
from ...assertions.registry import JudgeType, Kind
from ...judge.protocol import JudgeRunner
from ...suites.judge import JudgeConfig
from ..plan import Plan, Planned
from .cost import judge_cost
from .jury import combine, panel
from .rows import judged_rows


class JudgeHook:
    def __init__(self, plan: Plan, config: JudgeConfig, runner: JudgeRunner | None):
        self.plan, self.config, self.runner = plan, config, runner
        self.tests = {t.index: t for t in plan.suite.tests}
        self.case_cost: list[pl.DataFrame] = []  # (case_id, cost) of this batch's judge calls
        self.memo: dict[tuple, pl.DataFrame] = {}  # this batch's results, by assertion
        self.batch_last = -1

    def __call__(self, p: Planned, rows: pl.DataFrame) -> pl.DataFrame:
        if not rows.height:
            return self._grade(p, rows)
        # Polars types Series.min()/max() as any literal; an Int64 column's is an int
        first = int(rows["case_id"].min())  # type: ignore[arg-type]
        last = int(rows["case_id"].max())  # type: ignore[arg-type]
        if first > self.batch_last:  # batches come in case_id order: a new one begins
            self.memo.clear()
            self.case_cost.clear()
        self.batch_last = max(self.batch_last, last)
        key = (p.key, first, rows.height)
        if key not in self.memo:
            self.memo[key] = self._grade(p, rows)
        return self.memo[key]

    def _grade(self, p: Planned, rows: pl.DataFrame) -> pl.DataFrame:
        if self.runner is None:
            return judged_rows(p, rows.select(
                "case_id", "test_index", passed=pl.lit(None, pl.Boolean),
                score=pl.lit(None, pl.Float64), reason=pl.lit(NO_JUDGE)))
        if p.reads_judge_cost:
            return judge_cost(p, rows, self._case_costs(rows))
        null_rows = rows.filter(pl.col("output_kind") == "null")
        grade_rows = rows.filter(pl.col("output_kind") != "null")
        parts = [null_rows.select("case_id", "test_index", passed=pl.lit(False),  # fails,
                                  score=pl.lit(0.0), reason=pl.lit("output is null"),  # negated
                                  stopped=pl.lit(True))]  # or not, as every type's does
        for (model, rubric, options), tests in self.groups(p, grade_rows):
            subset = grade_rows.filter(pl.col("test_index").is_in(tests))
            outcomes = self.jury(p, model, lambda juror, r: p.atype.fn(
                self.graded(p, subset, juror, rubric, dict(options), repeat=r)))
            if "cost" in outcomes.columns:
                self.case_cost.append(outcomes.select("case_id", "cost"))
                outcomes = outcomes.drop("cost")
            parts.append(outcomes)
        schema = pl.Schema({"test_index": pl.Int32, **OUTCOME_SCHEMA})
        return judged_rows(p, pl.concat([x.cast(schema) for x in parts], how="diagonal"))

    def _case_costs(self, rows: pl.DataFrame) -> pl.DataFrame:
        """(case_id, cost) of this batch's judge calls, the other graded assertions graded
        first (memoised: each is graded once a batch)."""
        for q in self.plan.assertions:
            if q.kind is Kind.JUDGE and not q.reads_judge_cost:
                self(q, rows if q.tests is None else rows.filter(pl.col("test_index").is_in(q.tests)))
        if not self.case_cost:
            return pl.DataFrame(schema={"case_id": pl.Int64, "cost": pl.Float64})
        return pl.concat(self.case_cost).group_by("case_id").agg(pl.col("cost").sum())

    def jury(self, p: Planned, model: str | None,
             grade: Callable[[str, int], pl.DataFrame]) -> pl.DataFrame:
        """`grade(juror, repeat)`'s outcomes, once per grading of the panel (jury.py): one
        grader's as they are; several made one verdict, each grading kept in `votes`."""
        assert self.runner is not None
        before = self.runner.stats.graded
        gradings = [(juror, r, grade(juror, r)) for juror, r in panel(self.config, model)]
        if len(gradings) == 1:
            return gradings[0][2]
        # graded assertions, not gradings: the requests count each grading
        self.runner.stats.graded = before + (self.runner.stats.graded - before) // len(gradings)
        return combine(gradings, self.config.vote, self.threshold(p), p.spec.negate)

    def threshold(self, p: Planned) -> float | None:
        return p.spec.threshold if p.spec.threshold is not None else p.atype.default_threshold

    def graded(self, p: Planned, rows: pl.DataFrame, model: str | None, rubric: Any,
               options: dict[str, Any], repeat: int = 0) -> Graded:
        assert self.runner is not None
        return Graded(p.spec, rows, self.threshold(p), self.runner, self.config,
                      model or next(iter(self.config.jurors), ""), rubric, options,
                      repeat=repeat)

    def groups(self, p: Planned, rows: pl.DataFrame) -> list[tuple[tuple, list[int]]]:
        """Tests grouped by their effective (model, rubricPrompt, options), as (that
        triple, the tests' indexes) pairs: a rubricPrompt or an option may be a mapping or a
        list, so the triples are no dict keys."""
        out: dict[tuple, list[int]] = {}
        reads = p.atype.test_options if isinstance(p.atype, JudgeType) else ()
        # once per test of the suite in the batch (its options), not per row
        for index in rows["test_index"].unique().to_list():  # per-distinct: a test's options
            test = self.tests[index]
            provider = p.spec.args.get("provider") or p.spec.args.get("model") \
                or test.options.get("provider")
            rubric = p.spec.args.get("rubricPrompt", test.options.get("rubricPrompt"))
            options = tuple(sorted((k, _freeze(v)) for k, v in test.options.items()
                                   if k in reads))
            key = (provider_model(provider), _freeze(rubric), options)
            out.setdefault(key, []).append(index)
        return [((m, _thaw(r), tuple((k, _thaw(v)) for k, v in o)), t)
                for (m, r, o), t in out.items()]


def provider_model(provider: Any) -> str | None:
    """The model of a promptfoo provider id or object: 'openai:chat:gpt-4o' -> 'gpt-4o'."""
    if isinstance(provider, dict):
        provider = (provider.get("text") if "text" in provider else provider)
        provider = provider.get("id") if isinstance(provider, dict) else provider
    if not isinstance(provider, str):
        return None
    for prefix in ("openai:chat:", "openai:completion:", "openai:embedding:", "openai:"):
        if provider.startswith(prefix):
            return provider[len(prefix):]
    return provider


def _freeze(value: Any) -> Any:
    import json

    return None if value is None else json.dumps(value, sort_keys=True)


def _thaw(value: Any) -> Any:
    import json

    return None if value is None else json.loads(value)

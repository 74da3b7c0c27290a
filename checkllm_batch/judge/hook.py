"""The engine's judge hook: model-graded assertions of a batch, through the runner.

Per planned assertion it resolves the grading model and prompt (assertion > test options >
suite `judge:`), grades the rows, then applies what all graded types share: null outputs
fail, `not-` flips pass and score, an outcome without a verdict is an error with its reason.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from ..assertions.graded import NO_JUDGE
from ..assertions.registry import Kind
from ..evaluate.engine import RESULT_SCHEMA
from ..evaluate.plan import Plan, Planned
from ..spec.judge import JudgeConfig
from .grading import OUTCOME_SCHEMA, Graded
from .runner import Runner


class JudgeHook:
    def __init__(self, plan: Plan, config: JudgeConfig, runner: Runner | None):
        self.plan, self.config, self.runner = plan, config, runner
        self.tests = {t.index: t for t in plan.suite.tests}
        self.case_cost: list[pl.DataFrame] = []  # (case_id, cost) of this batch's judge calls
        self.memo: dict[tuple, pl.DataFrame] = {}  # this batch's results, by assertion
        self.batch_last = -1

    def __call__(self, p: Planned, rows: pl.DataFrame) -> pl.DataFrame:
        if not rows.height:
            return self._grade(p, rows)
        first, last = int(rows["case_id"].min()), int(rows["case_id"].max())  # type: ignore
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
            return _long(p, rows.select("case_id", "test_index", passed=pl.lit(None, pl.Boolean),
                                        score=pl.lit(None, pl.Float64), reason=pl.lit(NO_JUDGE)))
        if p.kind is Kind.JUDGE_COST:
            from .cost import judge_cost

            return judge_cost(self, p, rows)
        null_rows = rows.filter(pl.col("output_kind") == "null")
        grade_rows = rows.filter(pl.col("output_kind") != "null")
        parts = [null_rows.select("case_id", "test_index", passed=pl.lit(False),
                                  score=pl.lit(0.0), reason=pl.lit("output is null"))]
        for (model, rubric, options), tests in self.groups(p, grade_rows):
            subset = grade_rows.filter(pl.col("test_index").is_in(tests))
            outcomes = p.atype.fn(self.graded(p, subset, model, rubric, dict(options)))
            if "cost" in outcomes.columns:
                self.case_cost.append(outcomes.select("case_id", "cost"))
                outcomes = outcomes.drop("cost")
            parts.append(outcomes)
        return _long(p, pl.concat([x.cast({"test_index": pl.Int32, **OUTCOME_SCHEMA})
                                   for x in parts]))

    def graded(self, p: Planned, rows: pl.DataFrame, model: str | None, rubric: Any,
               options: dict[str, Any]) -> Graded:
        threshold = p.spec.threshold if p.spec.threshold is not None \
            else p.atype.default_threshold
        assert self.runner is not None
        return Graded(p.spec, rows, threshold, self.runner, self.config,
                      model or self.config.model or "", rubric, options)

    def groups(self, p: Planned, rows: pl.DataFrame) -> list[tuple[tuple, list[int]]]:
        """Tests grouped by their effective (model, rubricPrompt, options), as (that
        triple, the tests' indexes) pairs: a rubricPrompt or an option may be a mapping or a
        list, so the triples are no dict keys."""
        out: dict[tuple, list[int]] = {}
        for index in rows["test_index"].unique().to_list():
            test = self.tests[index]
            provider = p.spec.args.get("provider") or p.spec.args.get("model") \
                or test.options.get("provider")
            rubric = p.spec.args.get("rubricPrompt", test.options.get("rubricPrompt"))
            options = tuple(sorted((k, _freeze(v)) for k, v in test.options.items()
                                   if k in p.atype.test_options))
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


def _long(p: Planned, outcomes: pl.DataFrame) -> pl.DataFrame:
    """Outcomes -> RESULT_SCHEMA rows, with negation and error statuses."""
    raw, negate = pl.col("passed"), p.spec.negate
    passed = ~raw if negate else raw
    score = (1.0 - pl.col("score")).clip(0.0, 1.0) if negate else pl.col("score")
    reason = pl.when(raw.is_null()).then(pl.col("reason"))
    if negate:
        reason = reason.when(~passed).then(pl.concat_str(
            [pl.lit(f"Expected output to not pass {p.spec.type}: "),
             pl.col("reason").fill_null("")]))
    reason = reason.otherwise(pl.col("reason"))
    return outcomes.select(
        "case_id", pl.col("test_index").cast(pl.Int32), pl.lit(p.key, pl.Int32).alias("key"),
        status=pl.when(raw.is_null()).then(pl.lit("error")).when(passed).then(pl.lit("pass"))
        .otherwise(pl.lit("fail")),
        **{"pass": passed},
        score=pl.when(raw.is_null()).then(None).otherwise(score),
        reason=reason).cast(RESULT_SCHEMA)

"""The run's judge hook for a certified cascade (suites/cascade.py): each stage grades the
rows the stages before it were not sure of, cheapest first.

A stage keeps the rows whose confidence (confidence.py) reaches its threshold, certified
on the calibration set (certify.py, run/cascade.py); the rest go to the next stage. The
last stage keeps every row it is given when it is the reference (`reference: last`);
otherwise what it is not sure of is `abstain` (neither pass nor fail: left for a person),
or with `abstain: last` its verdict, not certified. A row whose output is null fails at
once, as every type's does, with no stage. Each result row records the stage that decided
it (`cascade_stage`, 1 the cheapest), the confidence that stage had, and whether a
certified threshold kept it (`certified`); its judge model is that stage's.
"""

from __future__ import annotations

import polars as pl

from ...suites.cascade import Stage, stages
from ...suites.judge import JudgeConfig
from ..plan import Plan, Planned
from ..verdict import ABSTAINED
from .confidence import vote_confidence
from .hook import JudgeHook

# what a cascade's result rows add (null on every other row)
CASCADE_SCHEMA = {"cascade_stage": pl.Int32, "confidence": pl.Float64, "certified": pl.Boolean}
Thresholds = dict[tuple[int, int], "float | None"]  # (planned key, stage index) -> threshold


class CascadeHook(JudgeHook):
    def __init__(self, plan: Plan, config: JudgeConfig, runner, thresholds: Thresholds
                 | None = None):
        super().__init__(plan, config, runner)
        self.cascade: tuple[Stage, ...] = stages(config)
        self.hooks = [JudgeHook(plan, stage.config, runner) for stage in self.cascade]
        self.thresholds: Thresholds = thresholds or {}
        # per stage: (requests sent or, in a dry run, planned; their estimated cost)
        self.tally: list[list[float]] = [[0, 0.0] for _ in self.cascade]

    def stage_rows(self, i: int, p: Planned, rows: pl.DataFrame) -> pl.DataFrame:
        """Stage i's result rows for `rows`, with its confidence and its number."""
        assert self.runner is not None
        hook, stats = self.hooks[i], self.runner.stats
        sent, cost = stats.sent, stats.est_cost
        graded = hook._grade(p, rows)
        self.tally[i][0] += stats.sent - sent
        self.tally[i][1] += stats.est_cost - cost
        self.case_cost.extend(hook.case_cost)  # CheckLLM `cost` reads every stage's calls
        hook.case_cost.clear()
        sure = [pl.col("confidence")] if "confidence" in graded.columns else []
        if "votes" in graded.columns:
            sure.insert(0, vote_confidence(pl.col("votes"), pl.col("pass")))
        confidence = pl.coalesce(sure) if sure else pl.lit(None, pl.Float64)
        return graded.with_columns(confidence=confidence.cast(pl.Float64),
                                   cascade_stage=pl.lit(i + 1, pl.Int32))

    def kept(self, p: Planned, i: int, graded: pl.DataFrame) -> pl.Series:
        """The rows stage i keeps: all when it is the reference, else those whose confidence
        reaches its certified threshold (none certified: none)."""
        if self.cascade[i].confidence is None:
            return pl.Series([True] * graded.height, dtype=pl.Boolean)
        threshold = self.thresholds.get((p.key, i))
        if threshold is None:
            return pl.Series([False] * graded.height, dtype=pl.Boolean)
        return graded["confidence"].fill_null(-1.0) >= threshold

    def _grade(self, p: Planned, rows: pl.DataFrame) -> pl.DataFrame:
        if self.runner is None or p.reads_judge_cost or not rows.height:
            return super()._grade(p, rows)
        before = self.runner.stats.graded
        null = rows.filter(pl.col("output_kind") == "null")
        parts = [self.hooks[0]._grade(p, null)] if null.height else []  # fails, no stage
        remaining = rows.filter(pl.col("output_kind") != "null")
        left = None
        for i in range(len(self.cascade)):
            if not remaining.height:
                break
            graded = self.stage_rows(i, p, remaining)
            keep = self.kept(p, i, graded)
            parts.append(graded.filter(keep).with_columns(certified=pl.lit(True)))
            left = graded.filter(~keep)
            remaining = remaining.join(left.select("case_id"), on="case_id", how="semi")
        if remaining.height and left is not None:
            parts.append(self.left_over(left))
        self.runner.stats.graded = before + rows.height  # cases graded, not gradings
        return pl.concat(parts, how="diagonal_relaxed")

    def left_over(self, left: pl.DataFrame) -> pl.DataFrame:
        """The rows the last stage was not sure of: abstained (an error stays an error), or
        with `abstain: last` its verdicts, not certified."""
        uncertified = left.with_columns(certified=pl.lit(False))
        if self.config.abstain == "last":
            return uncertified
        verdict = pl.col("status") != "error"
        return uncertified.with_columns(
            status=pl.when(verdict).then(pl.lit("abstain")).otherwise(pl.col("status")),
            **{"pass": pl.when(verdict).then(None).otherwise(pl.col("pass"))},
            score=pl.when(verdict).then(None).otherwise(pl.col("score")),
            reason=pl.when(verdict).then(pl.format("{} (stage {} said: {})", pl.lit(ABSTAINED),
                                                    pl.col("cascade_stage"), pl.col("reason")))
            .otherwise(pl.col("reason")),
            cascade_stage=pl.when(verdict).then(None).otherwise(pl.col("cascade_stage")))

    # the types decided across a test's outputs (decide.py) are graded by the last stage
    def groups(self, p: Planned, rows: pl.DataFrame):
        return self.hooks[-1].groups(p, rows) if self.hooks else super().groups(p, rows)

    def jury(self, p, model, grade):
        return self.hooks[-1].jury(p, model, grade) if self.hooks else super().jury(p, model,
                                                                                    grade)

    def graded(self, p, rows, model, rubric, options, repeat=0):
        if not self.hooks:
            return super().graded(p, rows, model, rubric, options, repeat)
        return self.hooks[-1].graded(p, rows, model, rubric, options, repeat)

"""Open the judge for a run: config -> client -> ledger -> runner -> the engine's hook."""

from __future__ import annotations

import contextlib
from typing import Iterator

import duckdb
import polars as pl

from ...assertions.registry import Kind
from ...errors import ConfigError, Problem, Where
from ...judge.ledger import Ledger
from ...judge.protocol import Judge
from ...judge.runner import Runner
from ...suites.judge import JudgeConfig
from ..plan import Plan
from .hook import JudgeHook


def open_hook(plan: Plan, con: duckdb.DuckDBPyConnection, run_id: str | None,
              config: JudgeConfig, *, judge: Judge | None = None, progress: bool = False,
              dry_run: bool = False) -> JudgeHook:
    if not config.enabled:
        return JudgeHook(plan, config, None)
    if config.cascade:  # read and checked (suites/cascade.py); never graded by one stage
        raise ConfigError([Problem(Where("judge"), "a judge cascade is read but not run yet "
                                   "by this version: give one judge model or a jury")])
    if judge is None and not dry_run:
        from ...judge.openai_judge import OpenAIJudge

        judge = OpenAIJudge(config)
    runner = Runner(config, judge, Ledger(con, run_id, config.mode), dry_run=dry_run,
                    progress=progress)
    return JudgeHook(plan, config, runner)


def plan_calls(plan: Plan, cases: pl.DataFrame, hook: JudgeHook) -> None:
    """A dry run's batch: only the model-graded assertions go to the (dry) hook. Nothing
    else is evaluated: python checks, webhooks and expressions could reach outside the
    process, and a dry run must not."""
    for p in plan.assertions:
        if p.kind is Kind.JUDGE and not p.reads_judge_cost:
            hook(p, cases if p.tests is None
                 else cases.filter(pl.col("test_index").is_in(list(p.tests))))


@contextlib.contextmanager
def opened_hook(plan: Plan, con: duckdb.DuckDBPyConnection, run_id: str | None,
                config: JudgeConfig, **options) -> Iterator[JudgeHook]:
    """The run's judge hook, closed (its calls in flight ended) however the block ends."""
    hook = open_hook(plan, con, run_id, config, **options)
    try:
        yield hook
    finally:
        close_hook(hook)


def close_hook(hook: JudgeHook) -> None:
    if isinstance(hook.runner, Runner):
        hook.runner.close()
        hook.runner.ledger.con.close()

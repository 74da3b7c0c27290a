"""Open the judge for a run: config -> client -> ledger -> runner -> the engine's hook."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Iterator

import duckdb
import polars as pl

from ...assertions.registry import Kind
from ...judge.ledger import Ledger
from ...judge.protocol import Judge, Reply, Request
from ...judge.runner import Runner
from ...suites.cascade import Stage, stages
from ...suites.judge import JudgeConfig
from ..plan import Plan
from .cascade import CascadeHook
from .hook import JudgeHook


def open_hook(plan: Plan, con: duckdb.DuckDBPyConnection, run_id: str | None,
              config: JudgeConfig, *, judge: Judge | None = None, progress: bool = False,
              dry_run: bool = False) -> JudgeHook:
    if not config.enabled:
        return JudgeHook(plan, config, None)
    cascade = stages(config)
    if judge is None and not dry_run:
        judge = _client(config, cascade)
    if cascade:  # one runner for every stage: one budget, one ledger, one set of stats
        prices = {m: p for s in cascade for m, p in s.config.prices.items()}
        runner = Runner(replace(config, prices={**config.prices, **prices}), judge,
                        Ledger(con, run_id, config.mode), dry_run=dry_run, progress=progress)
        return CascadeHook(plan, config, runner)
    runner = Runner(config, judge, Ledger(con, run_id, config.mode), dry_run=dry_run,
                    progress=progress)
    return JudgeHook(plan, config, runner)


def _client(config: JudgeConfig, cascade: tuple[Stage, ...]) -> Judge:
    """The endpoint's client; a cascade's stages may each have their own (its base_url,
    key): each request goes to its model's stage's."""
    from ...judge.openai_judge import OpenAIJudge

    if not cascade:
        return OpenAIJudge(config)
    clients: dict[str, Judge] = {}
    for stage in cascade:
        client = OpenAIJudge(stage.config)
        clients.update((model, client) for model in stage.config.jurors)
    return Routed(clients, next(iter(clients.values())))


class Routed:
    """A judge that sends each request to its model's client (embeddings: the first
    stage's)."""

    def __init__(self, clients: dict[str, Judge], default: Judge):
        self.clients, self.default = clients, default

    def send(self, request: Request) -> Reply:
        return self.clients.get(request.model, self.default).send(request)


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

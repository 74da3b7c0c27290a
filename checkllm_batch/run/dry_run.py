"""A dry run: the judge calls an evaluation would make, planned and priced, none sent."""

from __future__ import annotations

from pathlib import Path

from ..evaluate.judging.session import close_hook, open_hook, plan_calls
from ..evaluate.plan import build_plan
from ..judge.protocol import Stats
from ..load.sources import Outputs, open_outputs
from ..store import results as store
from ..suites.judge import JudgeConfig
from ..suites.model import Suite
from .batches import BatchEvaluator


def dry_run(suite: Suite, outputs: Outputs, *, db: str | Path, batch_rows: int,
            judge_config: JudgeConfig | None = None) -> Stats | None:
    """cb.dry_run (documented there): the cases of every batch built, only model-graded
    assertions planned, against the answers `db` already holds if it exists."""
    judge_config = (judge_config or JudgeConfig.from_sources(suite.judge)).check()
    plan = build_plan(suite)
    source, batches, _, _ = open_outputs(suite, outputs, batch_rows)
    con = store.connect(db if str(db) == ":memory:" or Path(db).exists() else ":memory:")
    hook = open_hook(plan, con, None, judge_config, dry_run=True)
    evaluator, done = BatchEvaluator(plan, source), 0
    try:
        for batch in batches:
            plan_calls(plan, evaluator.cases(batch, done), hook)
            done += batch.num_rows
    finally:
        close_hook(hook)
    return hook.runner.stats if hook.runner else None

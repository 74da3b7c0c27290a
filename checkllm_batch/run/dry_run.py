"""A dry run: the judge calls an evaluation would make, planned and priced, none sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..evaluate.judging.session import close_hook, open_hook, plan_calls
from ..evaluate.plan import build_plan
from ..judge.protocol import Stats
from ..load.sources import Outputs, open_outputs
from ..store import runs as store
from ..suites.judge import JudgeConfig
from ..suites.model import Suite
from .batches import BatchEvaluator
from .sample import SEED, JudgeSample


def dry_run(suite: Suite, outputs: Outputs, *, db: str | Path, batch_rows: int,
            judge_config: JudgeConfig | None = None, sample: tuple[Any, int] = (None, SEED)
            ) -> Stats | None:
    """cb.dry_run (documented there): the cases of every batch built, only model-graded
    assertions planned, against the answers `db` already holds if it exists; with a judge
    `sample` (judge_sample, seed), only its cases."""
    judge_config = (judge_config or JudgeConfig.from_sources(suite.judge)).check()
    plan = build_plan(suite)
    source, batches, total, _ = open_outputs(suite, outputs, batch_rows)
    chosen = JudgeSample.parse(sample[0], total, sample[1]) if sample[0] is not None else None
    con = store.connect(db if str(db) == ":memory:" or Path(db).exists() else ":memory:")
    hook = open_hook(plan, con, None, judge_config, dry_run=True)
    evaluator, done = BatchEvaluator(plan, source), 0
    try:
        for batch in batches:
            cases = evaluator.cases(batch, done)
            plan_calls(plan, cases if chosen is None else cases.filter(chosen.members(cases)),
                       hook)
            done += batch.num_rows
    finally:
        close_hook(hook)
    return hook.runner.stats if hook.runner else None

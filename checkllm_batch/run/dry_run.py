"""A dry run: the judge calls an evaluation would make, planned and priced, none sent."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from ..evaluate.judging.cascade import CascadeHook
from ..evaluate.judging.session import opened_hook, plan_calls
from ..judge.protocol import Stats
from ..load.sources import Outputs, open_outputs
from ..store import runs as store
from ..suites.judge import JudgeConfig
from ..suites.model import Suite
from . import cascade, lifecycle
from .batches import BatchEvaluator
from .sample import SEED, JudgeSample


def dry_run(suite: Suite, outputs: Outputs, *, db: str | Path, batch_rows: int,
            judge_config: JudgeConfig | None = None, sample: tuple[Any, int] = (None, SEED)
            ) -> Stats | None:
    """cb.dry_run (documented there): the cases of every batch built, only model-graded
    assertions planned, against the answers `db` already holds if it exists; with a judge
    `sample` (judge_sample, seed), only its cases."""
    prepared = lifecycle.prepare(suite, judge_config, None,
                                 partial(open_outputs, suite, outputs, batch_rows))
    source, batches, total, _ = prepared.outputs
    chosen = JudgeSample.parse(sample[0], total, sample[1]) if sample[0] is not None else None
    con = store.connect(db if str(db) == ":memory:" or Path(db).exists() else ":memory:")
    with opened_hook(prepared.plan, con, None, prepared.judge_config, dry_run=True) as hook:
        evaluator, done = BatchEvaluator(prepared.plan, source), 0
        for batch in batches:
            cases = evaluator.cases(batch, done)
            plan_calls(prepared.plan,
                       cases if chosen is None else cases.filter(chosen.members(cases)), hook)
            done += batch.num_rows
        if isinstance(hook, CascadeHook) and hook.runner is not None:  # per stage, with calibration and escalation
            hook.runner.stats.stages = cascade.estimate(con, hook, done)
    return hook.runner.stats if hook.runner else None

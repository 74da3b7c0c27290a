"""A judge cascade calibrated before its run's first batch is judged.

The calibration set is drawn as `--judge-sample` draws (run/sample.py: a seeded hash of
each case's stratum and id, every case in with the same probability), at `calibration`
cases over the source's: it is read from the source once more, graded by every stage, and
compared with the reference (the last stage's verdicts, or people's labels in the dataset
column of that name, read with judge_agreement's spellings). Per graded assertion, each
stage's threshold is certified on the calibration cases that reach it (certify.py), then
the calibration cases and the thresholds are recorded (store/cascade.py). A resume reads
them back and calibrates nothing again; a run stopped while calibrating calibrates again,
its calls answered from the judge_calls cache.
"""

from __future__ import annotations

from typing import Any, Iterator

import polars as pl
import pyarrow as pa

from ..assertions.registry import Kind
from ..errors import InputError
from ..evaluate.judging.cascade import CascadeHook
from ..evaluate.judging.certify import certify
from ..evaluate.plan import Planned
from ..store import cascade as record
from ..store.agreement import HUMAN
from ..suites.judge import JudgeConfig
from .batches import BatchEvaluator
from .sample import JudgeSample

SEED = 45  # the calibration draw's (the judge sample's is 35)


def draw(config: dict[str, Any], judge: JudgeConfig, total: int | None
         ) -> JudgeSample | None:
    """The calibration draw of a cascade (None: no cascade): `calibration` cases of the
    source's `total`, recorded in the run's config; the same again on a resume (a seeded
    hash of each case)."""
    if not judge.cascade:
        return None
    if config.get("judge_sample"):
        raise InputError("a judge cascade gives a verdict on every case: --judge-sample "
                         "judges a sample; choose one")
    if total is None:
        raise InputError("a judge cascade calibrates on a random set of the cases: it needs "
                         "a source of known length (a file, a table or a frame), not a stream")
    chosen = JudgeSample.parse(judge.calibration, total, SEED)
    config["cascade_calibration"] = chosen.record()
    return chosen


def calibrate(con: Any, run_id: str, hook: CascadeHook, evaluator: BatchEvaluator,
              batches: Iterator[pa.RecordBatch], chosen: JudgeSample) -> None:
    """The hook's thresholds: the run's recorded ones, else certified now and recorded."""
    thresholds = record.recorded(con, run_id)
    if thresholds is not None:
        hook.thresholds = thresholds
        return
    cases = calibration_cases(evaluator, batches, chosen)
    found = []
    for p in evaluator.plan.assertions:
        if p.kind is Kind.JUDGE and not p.reads_judge_cost:
            rows = cases if p.tests is None else cases.filter(
                pl.col("test_index").is_in(list(p.tests)))
            found += stage_thresholds(con, hook, p, rows.filter(
                pl.col("output_kind") != "null"))
    hook.case_cost.clear()
    record.record(con, run_id, cases["case_id"], found)


def calibration_cases(evaluator: BatchEvaluator, batches: Iterator[pa.RecordBatch],
                      chosen: JudgeSample) -> pl.DataFrame:
    parts, first = [], 0
    for batch in batches:
        cases = evaluator.cases(batch, first)
        parts.append(cases.filter(chosen.members(cases)))
        first += batch.num_rows
    return pl.concat(parts, how="diagonal_relaxed")


def stage_thresholds(con: Any, hook: CascadeHook, p: Planned, rows: pl.DataFrame
                     ) -> list[dict[str, Any]]:
    """Each stage's certified threshold for `p` on the calibration `rows`, set on the hook
    and returned as records."""
    if not rows.height:
        return []
    config = hook.config
    graded = [hook.stage_rows(i, p, rows) for i in range(len(hook.cascade))]
    reference = _reference(con, hook, p, rows, graded[-1])
    reach = rows.select("case_id")
    out = []
    for i, stage in enumerate(hook.cascade):
        here = graded[i].join(reach, on="case_id", how="semi").join(
            reference, on="case_id", how="left")
        if stage.confidence is None:  # the reference itself: keeps every row it is given
            out.append(_record(hook, p, i, {"threshold": None, "n": here.height, "k": 0,
                                            "bound": None, "tried": 0}, here.height))
            continue
        usable = here.filter(pl.col("pass").is_not_null() & pl.col("reference").is_not_null()
                             & pl.col("confidence").is_not_null())
        chosen = certify(usable["confidence"].to_numpy(),
                         (usable["pass"] == usable["reference"]).to_numpy(),
                         config.agreement, config.risk)
        hook.thresholds[(p.key, i)] = chosen.threshold
        out.append(_record(hook, p, i, chosen.record(), usable.height))
        kept = here.filter(hook.kept(p, i, here))
        reach = reach.join(kept.select("case_id"), on="case_id", how="anti")
    return out


def _record(hook: CascadeHook, p: Planned, i: int, chosen: dict[str, Any], calibrated: int
            ) -> dict[str, Any]:
    stage, config = hook.cascade[i], hook.config
    return {**chosen, "key": p.key, "type": p.spec.type, "metric": p.spec.metric,
            "stage": i + 1, "models": list(stage.config.jurors),
            "confidence": stage.confidence, "calibrated": calibrated,
            "agreement": config.agreement, "risk": config.risk,
            "reference": config.reference}


def _reference(con: Any, hook: CascadeHook, p: Planned, rows: pl.DataFrame,
               last: pl.DataFrame) -> pl.DataFrame:
    """(case_id, reference): the verdict to agree with, null where there is none."""
    if hook.config.reference == "last":
        return last.select("case_id", reference=pl.when(pl.col("status").is_in(
            ["pass", "fail"])).then(pl.col("pass")))
    label = hook.config.reference
    texts = rows.select("case_id", t=pl.col("vars").str.json_path_match(f'$["{label}"]')  # noqa: F841
                        .str.strip_chars().str.to_lowercase().replace("", None))
    threshold = hook.threshold(p)
    human = HUMAN.format(t="t", threshold="NULL" if threshold is None else repr(float(threshold)))
    return pl.DataFrame(pl.from_arrow(con.sql(
        f"SELECT case_id, {human} AS reference FROM texts").to_arrow_table()))


ASSUMED_KEPT = 0.7  # a dry run's stated assumption without a pilot: each stage keeps 70 %


def estimate(con: Any, hook: CascadeHook, cases: int) -> list[dict[str, Any]]:
    """A dry run's calls and cost per stage, from what the (dry) hook planned with every case
    reaching every stage: the calibration cases reach each; of the others, the share the
    stages before keep is the latest recorded calibration's with the same stages (a pilot),
    else the stated assumption (each keeps ASSUMED_KEPT)."""
    kept, pilot = _pilot(con, hook)
    share = min(1.0, hook.config.calibration / max(cases, 1))
    reach, out = 1.0, []
    for i, stage in enumerate(hook.cascade):
        calls, cost = hook.tally[i]
        factor = share + (1 - share) * reach
        out.append({"stage": i + 1, "models": list(stage.config.jurors),
                    "every_case_calls": int(calls), "every_case_cost": cost,
                    "calls": round(calls * factor), "cost": cost * factor, "reach": reach,
                    "from": pilot or f"assumed: each stage keeps {ASSUMED_KEPT:.0%}"})
        if stage.confidence is not None:
            reach *= 1 - kept.get(i + 1, ASSUMED_KEPT)
    return out


def _pilot(con: Any, hook: CascadeHook) -> tuple[dict[int, float], str | None]:
    """Each stage's kept share of the calibration cases it was given, in the latest run
    whose cascade had the same stages (none: {}, None)."""
    models = [list(s.config.jurors) for s in hook.cascade]
    rows = con.execute("""
        SELECT run_id, stage, models, sum(n) / sum(calibrated) FROM cascade_thresholds
        WHERE calibrated > 0 GROUP BY ALL ORDER BY max(rowid) DESC""").fetchall()
    by_run: dict[str, dict[int, tuple[list, float]]] = {}
    for run_id, stage, stage_models, share in rows:
        by_run.setdefault(run_id, {})[stage] = (stage_models, share)
    for run_id, stages in by_run.items():
        if [m for _, (m, _) in sorted(stages.items())] == models:
            return ({s: share for s, (_, share) in stages.items()},
                    f"the calibration of run {run_id}")
    return {}, None

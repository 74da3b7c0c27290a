"""Corrected pass rates (issue 44): coverage of the PPI++ interval, and the readers' time.

    .venv/bin/python benchmarks/corrected.py coverage [DRAWS]    (default 1,000)
    .venv/bin/python benchmarks/corrected.py speed [N]           (default 1,000,000)

coverage: 20,000 judged cases with a known truth (the people pass 60 %), a judge with
sensitivity 0.9 and specificity 0.7 (it passes 66 %). Each draw takes 200 labels at random
(uniform), and, apart, 200 by the judge's verdict (labels sample --by verdict), in
proportion to each verdict's cases and evenly (--allocation equal); it reports how often each 95 % interval covers the people's rate over all 20,000
cases, and the intervals' mean half-widths. Every estimate is analysis/corrected.estimate,
the SQL the corrected_pass_rates macro runs.

speed: a run of N cases judged by a scripted llm-rubric judge (two distinct outputs, so two
judge calls), 1,000 of them drawn with Results.sample_labels and labelled with
Results.add_labels; then the corrected_pass_rates reader is timed (wall and CPU), on the
database opened again read-only as a reader opens it (the writer's connection has a bounded
buffer that slows a large read).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

import checkllm_batch as cb
from checkllm_batch.analysis.corrected import estimate
from checkllm_batch.analysis.labels import allocate
from checkllm_batch.judge import ScriptedJudge

CASES, LABELS, PEOPLE, TPR, TNR = 20_000, 200, 0.6, 0.9, 0.7


def world(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.random(CASES) < PEOPLE
    judged = np.where(truth, rng.random(CASES) < TPR, rng.random(CASES) > TNR)
    return truth.astype(float), judged.astype(float)


def draw(rng: np.random.Generator, judged: np.ndarray, sampling: str) -> np.ndarray:
    """The labelled cases' indices: uniform, or by the judge's verdict with labels in
    proportion to each verdict's cases or evenly (Results.sample_labels' allocations)."""
    if sampling == "uniform":
        return rng.choice(CASES, LABELS, replace=False)
    strata = [np.flatnonzero(judged == v) for v in (0.0, 1.0)]
    quota = allocate(np.array([len(s) for s in strata]), LABELS, sampling)
    return np.concatenate([rng.choice(s, k, replace=False) for s, k in zip(strata, quota)])


def draws_frame(truth, judged, draws: int, sampling: str, rng) -> pl.DataFrame:
    """Every draw's rows at once: its labelled cases one row each, its judged-only cases
    as two counted rows (m: the judge's passes and fails among them), the judge's verdict
    as the stratum when sampled by it."""
    labelled = np.stack([draw(rng, judged, sampling) for _ in range(draws)])
    unl_pass = judged.sum() - judged[labelled].sum(axis=1)
    rows = pl.concat([
        pl.DataFrame({"draw": np.repeat(np.arange(draws), LABELS),
                      "y": truth[labelled].ravel(), "f": judged[labelled].ravel(), "m": 1.0}),
        pl.DataFrame({"draw": np.repeat(np.arange(draws), 2), "y": np.nan,
                      "f": np.tile([1.0, 0.0], draws),
                      "m": np.stack([unl_pass, CASES - LABELS - unl_pass], axis=1).ravel()})])
    stratum = pl.lit("all") if sampling == "uniform" else pl.col("f").cast(pl.String)
    return rows.with_columns(pl.col("y").fill_nan(None), stratum=stratum)


def coverage(draws: int) -> None:
    truth, judged = world()
    target = truth.mean()
    rng = np.random.default_rng(1)
    print(f"truth {target:.4f}, judge-only rate {judged.mean():.4f}, {CASES:,} cases, "
          f"{LABELS} labels, {draws:,} draws\n")
    print("| sampling | interval | covers the truth | mean half-width (points) |\n"
          "|---|---|---|---|")
    for sampling in ("uniform", "proportional", "equal"):
        rows = estimate(draws_frame(truth, judged, draws, sampling, rng), ["draw"])
        name = sampling if sampling == "uniform" else f"by verdict, {sampling}"
        for what, low, high in (("PPI++", "corrected_low", "corrected_high"),
                                ("labels only (Wilson)", "labels_low", "labels_high"),
                                ("judge only (Wilson)", "judge_low", "judge_high")):
            covered, half = rows.select(
                ((pl.col(low) <= target) & (pl.col(high) >= target)).mean(),
                ((pl.col(high) - pl.col(low)) / 2).mean() * 100).row(0)
            print(f"| {name} | {what} | {covered:.1%} | {half:.2f} |")
        print(f"| {name} | n_effective (mean) | {rows['n_effective'].mean():.0f} of "
              f"{LABELS} | |")


def judge(request) -> str:
    text = "\n".join(c for _, c in request.messages)
    passed = text.split("<Output>")[-1].strip().startswith("P")
    return json.dumps({"pass": passed, "score": float(passed), "reason": "scripted"})


def timed(name: str, fn):
    start, cpu = time.perf_counter(), time.process_time()
    result = fn()
    print(f"| {name} | {time.perf_counter() - start:.2f} s | {time.process_time() - cpu:.2f} s |")
    return result


def speed(n: int) -> None:
    directory = Path(tempfile.mkdtemp())
    (directory / "suite.yaml").write_text(
        "judge:\n  model: scripted\ndefaultTest:\n  assert:\n    - type: llm-rubric\n"
        "      value: the answer is right\n")
    rng = np.random.default_rng(0)
    truth = rng.random(n) < PEOPLE
    judged = np.where(truth, rng.random(n) < TPR, rng.random(n) > TNR)
    frame = pl.DataFrame({"output": np.where(judged, "P answer", "F answer"),
                          "id": np.arange(n), "provider": np.array(["a", "b"])[np.arange(n) % 2]})
    db = directory / "results.duckdb"
    print(f"| step ({n:,} judged cases, 1,000 labels) | wall | CPU |\n|---|---|---|")
    run = timed("evaluate", lambda: cb.evaluate(directory / "suite.yaml", frame, db=db,
                                                judge=ScriptedJudge(judge)))
    run.con.close()
    results = cb.Results(db)
    drawn = timed("sample_labels(1000, by verdict)",
                  lambda: results.sample_labels(1000, by=["verdict"], seed=1))
    ids = drawn["case_id"].to_numpy()
    labels = pl.DataFrame({"case_id": ids, "human": np.where(truth[ids], "pass", "fail")})
    timed("add_labels", lambda: results.add_labels(labels))
    results.con.close()  # a reader opens the database read-only (the CLI, cb.Results(path))
    results = cb.Results(db)
    for i in range(3):
        table = timed(f"corrected_pass_rates (round {i + 1})",
                      lambda: results.corrected_pass_rates("human"))
    print()
    print(table.select("provider", "n_labelled", "n_judged", "judge_only", "labels_only",
                       "corrected", "corrected_low", "corrected_high", "n_effective"))
    print(f"the people's rate: {truth.mean():.4f}")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "coverage"
    count = int(sys.argv[2]) if len(sys.argv) > 2 else None
    coverage(count or 1000) if what == "coverage" else speed(count or 1_000_000)

"""Time the analysis layer on a large results database: two runs of N cases each.

    .venv/bin/python benchmarks/analysis.py [N]      (default 1_000_000)

Builds the database with `cb.evaluate` (a classifier suite: gold label var, equals check,
F-score counters), then times the common questions, the comparison, export and report, and
the 95 % intervals (issue 32): Wilson in the views, the readers' bootstrap (1,000
replicates) of mean score, named and derived metrics and classification figures, compare's
McNemar and paired bootstrap, and the bootstrap's worst case, N units that all differ
(continuous scores), timed on its numpy core."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

import checkllm_batch as cb
from checkllm_batch.analysis.stats import replicate_sums

SUITE = """
defaultTest:
  assert:
    - {type: equals, value: "{{label}}", metric: accuracy}
    - {type: contains, value: "spam", metric: said_spam, weight: 0}
derivedMetrics:
  - {name: spam_rate, value: "said_spam / __count"}
"""


def outputs(n: int, seed: int) -> pl.DataFrame:
    labels = np.array(["spam", "ham", "other"])
    gold = labels[np.random.default_rng(0).integers(0, 3, n)]  # the same cases in every run
    rng = np.random.default_rng(seed)
    wrong = rng.random(n) < 0.2
    predicted = np.where(wrong, labels[rng.integers(0, 3, n)], gold)
    return pl.DataFrame({"provider": np.array(["a", "b", "c"])[np.arange(n) % 3],
                         "item": np.arange(n) // 3, "label": gold, "output": predicted})


def timed(name: str, fn):
    """Run fn; print its wall time and its CPU time (all threads: steadier on a shared
    machine)."""
    start, cpu = time.perf_counter(), time.process_time()
    result = fn()
    print(f"| {name} | {time.perf_counter() - start:.2f} s | {time.process_time() - cpu:.2f} s |")
    return result


def main(n: int) -> None:
    directory = Path(tempfile.mkdtemp())
    suite_path = directory / "suite.yaml"
    suite_path.write_text(SUITE)
    db = directory / "results.duckdb"
    print(f"| step ({n:,} cases per run, 3 providers) | wall | CPU |\n|---|---|---|")
    run_a = timed("evaluate run A", lambda: cb.evaluate(suite_path, outputs(n, 1), db=db))
    run_b = timed("evaluate run B", lambda: cb.evaluate(suite_path, outputs(n, 2), db=db))
    run_a.con.close()
    run_b.con.close()
    res = cb.Results(db)
    timed("pass_rates", lambda: res.pass_rates(run_a.run_id))
    timed("pass_rates(by='type')", lambda: res.pass_rates(run_a.run_id, by="type"))
    timed("metrics (named + derived)", lambda: res.metrics(run_a.run_id))
    timed("failures (all rows)", lambda: res.failures(run_a.run_id))
    timed("score_distribution", lambda: res.scores(run_a.run_id))
    timed("classification('label'), no intervals",
          lambda: res.classification("label", run=run_a.run_id, intervals=False))
    timed("classification('label') with bootstrap intervals",
          lambda: res.classification("label", run=run_a.run_id))
    timed("intervals: bootstrap of mean score, named, derived (1,000 replicates)",
          lambda: cb.Results(db).intervals(run_a.run_id))
    timed("metrics with intervals (a fresh Results)", lambda: cb.Results(db).metrics(run_a.run_id))
    comparison = timed("compare A B (McNemar, Holm, paired bootstrap)",
                       lambda: res.compare(run_a.run_id, run_b.run_id))
    print(f"| (compare counts: {comparison.counts()}) | | |")
    print(f"| (pass rates: {comparison.pass_rates.select('provider', 'diff', 'p_value').rows()})"
          " | | |")
    rng = np.random.default_rng(0)
    group = np.repeat(np.arange(3), -(-n // 3))[:n]
    timed(f"bootstrap core, {n:,} distinct units x 3 sums (continuous scores' worst case)",
          lambda: replicate_sums(group, np.ones(n), rng.random((n, 3))))
    timed("export run A to Parquet", lambda: res.export(directory / "out", run_a.run_id))
    path = timed("report run A (HTML)", lambda: res.report(directory / "r.html", run_a.run_id))
    print(f"| (report size: {path.stat().st_size / 1024:.0f} KiB) | | |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)

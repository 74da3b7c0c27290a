"""Run comparison: which cases regressed or improved from run A to run B, and how each
metric moved.

Cases are matched by (test_id, provider, prompt, vars) — the case's identity, not its row
position, so reordered or filtered outputs still line up — and, when that key repeats within
a run (the same test asked twice), by occurrence order (case_id) within the key. A case
regressed when its test passed in A and did not pass (fail or error) in B; improved the other
way round; cases present in only one run are 'added' / 'removed', never regressions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from .results import Results

_SIDE = """
    SELECT c.case_id, c.test_id, c.provider, c.prompt, CAST(c.vars AS VARCHAR) AS vars,
           c.output, t.status, t.score, t.reason,
           row_number() OVER (PARTITION BY c.test_id, c.provider, c.prompt,
                              CAST(c.vars AS VARCHAR) ORDER BY c.case_id) AS occurrence
    FROM cases c JOIN test_results t USING (run_id, case_id) WHERE c.run_id = {run}"""

_KEY = ("test_id", "provider", "prompt", "vars", "occurrence")

CASES_SQL = f"""
    WITH a AS ({_SIDE.format(run="$a")}), b AS ({_SIDE.format(run="$b")})
    SELECT {", ".join(f"COALESCE(a.{k}, b.{k}) AS {k}" for k in _KEY)},
           CASE WHEN a.case_id IS NULL THEN 'added' WHEN b.case_id IS NULL THEN 'removed'
                WHEN a.status = 'pass' AND b.status <> 'pass' THEN 'regressed'
                WHEN a.status <> 'pass' AND b.status = 'pass' THEN 'improved'
                ELSE 'unchanged' END AS change,
           a.status AS status_a, b.status AS status_b, a.score AS score_a, b.score AS score_b,
           a.case_id AS case_a, b.case_id AS case_b, a.output AS output_a,
           b.output AS output_b, b.reason AS reason_b
    FROM a FULL JOIN b ON {" AND ".join(f"a.{k} IS NOT DISTINCT FROM b.{k}" for k in _KEY)}
    ORDER BY COALESCE(a.case_id, b.case_id), b.case_id"""

_METRICS_SIDE = """
    SELECT provider, prompt, 'pass_rate' AS metric, 'test' AS kind, pass_rate AS value
    FROM pass_rates WHERE run_id = {run}
    UNION ALL
    SELECT provider, prompt, metric, kind, value FROM metric_summary WHERE run_id = {run}"""

_METRIC_KEY = ("provider", "prompt", "metric", "kind")

METRICS_SQL = f"""
    WITH a AS ({_METRICS_SIDE.format(run="$a")}), b AS ({_METRICS_SIDE.format(run="$b")})
    SELECT {", ".join(f"COALESCE(a.{k}, b.{k}) AS {k}" for k in _METRIC_KEY)},
           a.value AS value_a, b.value AS value_b, b.value - a.value AS delta
    FROM a FULL JOIN b ON {" AND ".join(f"a.{k} IS NOT DISTINCT FROM b.{k}"
                                        for k in _METRIC_KEY)}
    ORDER BY kind DESC, metric, provider NULLS FIRST, prompt NULLS FIRST"""


@dataclass
class Comparison:
    run_a: str
    run_b: str
    cases: pl.DataFrame    # every matched case with `change`
    metrics: pl.DataFrame  # provider, prompt, metric, kind, value_a, value_b, delta

    @property
    def regressed(self) -> pl.DataFrame:
        return self.cases.filter(pl.col("change") == "regressed")

    @property
    def improved(self) -> pl.DataFrame:
        return self.cases.filter(pl.col("change") == "improved")

    def counts(self) -> dict[str, int]:
        """Cases per change: regressed, improved, unchanged, added, removed."""
        counted = dict(self.cases["change"].value_counts().iter_rows())
        return {k: int(counted.get(k, 0))
                for k in ("regressed", "improved", "unchanged", "added", "removed")}


def compare(results: Results, run_a: str, run_b: str) -> Comparison:
    params = {"a": run_a, "b": run_b}
    return Comparison(run_a, run_b, results.query(CASES_SQL, params),
                      results.query(METRICS_SQL, params))

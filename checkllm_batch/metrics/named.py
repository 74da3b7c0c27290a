"""Named metrics (SPEC §3): per run x provider x prompt, the sum of each metric's scores
(weighted; metric-only counters count 1) over the cases' results, with the weight and the
count; then the derived metrics over those sums. All in SQL, once every batch is stored."""

from __future__ import annotations

import duckdb

from ..spec.model import Suite
from .derived import derived_query


def compute(con: duckdb.DuckDBPyConnection, run_id: str, suite: Suite) -> None:
    """Insert the run's named_metrics and derived_metrics rows."""
    con.execute("""
        INSERT INTO named_metrics
        SELECT a.run_id, c.provider, c.prompt, a.metric,
               SUM(a.score * CASE WHEN a.metric_only THEN 1 ELSE a.weight END),
               SUM(CASE WHEN a.metric_only THEN 1 ELSE a.weight END), COUNT(*)
        FROM (SELECT run_id, case_id, metric, score, weight, metric_only, status
              FROM assertion_results WHERE run_id = $run
              UNION ALL  -- each named score of a result (a GradingResult's namedScores)
              SELECT run_id, case_id, n.metric, n.score, weight, metric_only, status
              FROM (SELECT *, unnest(named_scores) AS n FROM assertion_results
                    WHERE run_id = $run AND named_scores IS NOT NULL)
              WHERE n.metric IS DISTINCT FROM metric) a
        JOIN cases c USING (run_id, case_id)
        WHERE a.metric IS NOT NULL AND a.status IN ('pass', 'fail')
        GROUP BY ALL""", {"run": run_id})
    if suite.derived_metrics:
        con.execute(f"INSERT INTO derived_metrics SELECT $run, * FROM ({derived_query(suite)})",
                    {"run": run_id})
